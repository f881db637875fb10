#include "mantissa/data/loaders.hpp"

#include <cstring>
#include <numeric>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::data {
namespace {

void check_part(const BatchPart& part, std::int64_t batch) {
  if (part.parts < 1 || part.index < 0 || part.index >= part.parts) {
    throw Error("loader: part " + std::to_string(part.index) + " of " + std::to_string(part.parts) +
                " does not exist");
  }
  if (batch % part.parts != 0) {
    throw Error("batch_size: " + std::to_string(batch) + " does not split into " +
                std::to_string(part.parts) + " equal parts");
  }
}

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle) {
  if (n < 0) throw Error("epoch_order: " + std::to_string(n) + " items (expected >= 0)");
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  tensor::Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(epoch) + 1);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.next_u64() % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

ImageLoader::ImageLoader(const ImageDataset& data, std::int64_t batch_size, bool shuffle,
                         std::uint64_t seed, bool drop_last)
    : data_(data), batch_(batch_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  if (batch_size < 1) throw Error("batch_size: " + std::to_string(batch_size) + " must be >= 1");
  if (!data.images.defined() || data.images.shape().size() != 2 ||
      data.images.dim(0) != data.size()) {
    throw Error("image dataset: images of shape " +
                (data.images.defined() ? data.images.shape().to_string() : "(undefined)") +
                " for " + std::to_string(data.size()) +
                " labels (expected [labels, pixels]: one row per label)");
  }
  if (data.size() < (drop_last ? batch_size : 1)) {
    throw Error("batch_size: " + std::to_string(batch_size) + " is larger than the dataset (" +
                std::to_string(data.size()) + " examples)");
  }
}

std::int64_t ImageLoader::batches_per_epoch() const {
  return drop_last_ ? data_.size() / batch_ : (data_.size() + batch_ - 1) / batch_;
}

void ImageLoader::set_state(const LoaderState& s) {
  if (s.epoch < 0 || s.position < 0 || s.position > data_.size()) {
    throw Error("loader state: position " + std::to_string(s.position) + " outside the dataset");
  }
  state_ = s;
}

void ImageLoader::set_part(const BatchPart& part) {
  if (!drop_last_ && part.parts > 1) {
    throw Error("loader: a part of every batch needs whole batches (drop_last)");
  }
  check_part(part, batch_);
  part_ = part;
}

ImageBatch ImageLoader::next() {
  const std::int64_t n = data_.size();
  const std::int64_t need = drop_last_ ? batch_ : 1;
  if (n - state_.position < need) {
    ++state_.epoch;
    state_.position = 0;
  }
  if (order_epoch_ != state_.epoch) {
    order_ = epoch_order(n, seed_, state_.epoch, shuffle_);
    order_epoch_ = state_.epoch;
  }
  const std::int64_t count = std::min(batch_, n - state_.position);
  const std::int64_t mine = count / part_.parts, first = part_.index * mine;
  const std::int64_t pixels = data_.images.dim(1);
  ImageBatch b{tensor::Tensor::empty({mine, pixels}), {}};
  const float* src = data_.images.f32();
  for (std::int64_t i = 0; i < mine; ++i) {
    const std::int64_t e = order_[static_cast<std::size_t>(state_.position + first + i)];
    std::memcpy(b.x.f32() + i * pixels, src + e * pixels,
                static_cast<std::size_t>(pixels) * sizeof(float));
    b.y.push_back(data_.labels[static_cast<std::size_t>(e)]);
  }
  state_.position += count;
  return b;
}

TextLoader::TextLoader(const ByteText& text, std::int64_t context, std::int64_t batch_size,
                       bool shuffle, std::uint64_t seed)
    : text_(text), context_(context), batch_(batch_size), shuffle_(shuffle), seed_(seed) {
  if (context < 1) throw Error("context: " + std::to_string(context) + " must be >= 1");
  if (batch_size < 1) throw Error("batch_size: " + std::to_string(batch_size) + " must be >= 1");
  const auto tokens = static_cast<std::int64_t>(text.tokens.size());
  windows_ = tokens > context ? (tokens - 1) / context : 0;
  if (windows_ < batch_size) {
    throw Error((text.source.empty() ? std::string("text loader") : text.source) + ": " +
                std::to_string(tokens) + " tokens make " + std::to_string(windows_) +
                " windows of context " + std::to_string(context) + ", fewer than one batch of " +
                std::to_string(batch_size));
  }
}

void TextLoader::set_state(const LoaderState& s) {
  if (s.epoch < 0 || s.position < 0 || s.position > windows_) {
    throw Error("loader state: position " + std::to_string(s.position) + " outside the text");
  }
  state_ = s;
}

void TextLoader::set_part(const BatchPart& part) {
  check_part(part, batch_);
  part_ = part;
}

TextBatch TextLoader::next() {
  if (windows_ - state_.position < batch_) {
    ++state_.epoch;
    state_.position = 0;
  }
  if (order_epoch_ != state_.epoch) {
    order_ = epoch_order(windows_, seed_, state_.epoch, shuffle_);
    order_epoch_ = state_.epoch;
  }
  TextBatch b;
  b.batch = batch_ / part_.parts;
  b.context = context_;
  const std::int64_t first = state_.position + part_.index * b.batch;
  for (std::int64_t i = 0; i < b.batch; ++i) {
    const std::int64_t start = order_[static_cast<std::size_t>(first + i)] * context_;
    for (std::int64_t t = 0; t < context_; ++t) {
      b.inputs.push_back(text_.tokens[static_cast<std::size_t>(start + t)]);
      b.targets.push_back(text_.tokens[static_cast<std::size_t>(start + t + 1)]);
    }
  }
  state_.position += batch_;
  return b;
}

}  // namespace mantissa::data
