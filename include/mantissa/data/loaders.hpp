#pragma once
// Batching loaders whose order is a function of (seed, epoch), with a small state
// (epoch, position) that a checkpoint stores: a loader restored from a state yields exactly
// the batches an uninterrupted one would have.
#include <cstdint>
#include <vector>

#include "mantissa/data/datasets.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::data {

struct LoaderState {
  std::int64_t epoch = 0;
  std::int64_t position = 0;  // index into the epoch's order of the next example
};

// Data parallel: a loader given a part (index p of P, tensor::BatchPart) still walks the
// epoch's order a whole batch at a time (batch_size, the global batch) but returns only
// examples [p*b, (p+1)*b) of each batch, b = batch_size / P. Its state counts the whole
// batches' examples, so it is the same in every part and carries over to any number of parts:
// the parts' batches, in part order, are the batch one loader without a part returns.
// set_part throws mantissa::Error when batch_size does not split into P parts.
using tensor::BatchPart;

// The order of `n` examples in `epoch`: a Fisher-Yates shuffle seeded by (seed, epoch), or
// 0..n-1 without shuffling.
std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle);

struct ImageBatch {
  tensor::Tensor x;  // [batch, pixels]
  std::vector<std::int32_t> y;
};

class ImageLoader {
 public:
  // drop_last: an epoch's last partial batch is skipped (training); else it is returned.
  ImageLoader(const ImageDataset& data, std::int64_t batch_size, bool shuffle, std::uint64_t seed,
              bool drop_last);
  ImageBatch next();  // moves to the next epoch when one ends
  std::int64_t batches_per_epoch() const;
  LoaderState state() const { return state_; }
  void set_state(const LoaderState& s);
  void set_part(const BatchPart& part);  // training loaders only (drop_last)

 private:
  const ImageDataset& data_;
  std::int64_t batch_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
  LoaderState state_;
  BatchPart part_;
  std::vector<std::int64_t> order_;
  std::int64_t order_epoch_ = -1;
};

struct TextBatch {
  std::vector<std::int32_t> inputs, targets;  // batch x context, row-major; targets shifted by 1
  std::int64_t batch = 0, context = 0;
};

// Windows of context + 1 tokens starting every `context` tokens, in an order shuffled per
// epoch; each batch takes batch_size windows.
class TextLoader {
 public:
  TextLoader(const ByteText& text, std::int64_t context, std::int64_t batch_size, bool shuffle,
             std::uint64_t seed);
  TextBatch next();
  std::int64_t windows() const { return windows_; }
  std::int64_t batches_per_epoch() const { return windows_ / batch_; }
  LoaderState state() const { return state_; }
  void set_state(const LoaderState& s);
  void set_part(const BatchPart& part);

 private:
  const ByteText& text_;
  std::int64_t context_, batch_, windows_;
  bool shuffle_;
  std::uint64_t seed_;
  LoaderState state_;
  BatchPart part_;
  std::vector<std::int64_t> order_;
  std::int64_t order_epoch_ = -1;
};

}  // namespace mantissa::data
