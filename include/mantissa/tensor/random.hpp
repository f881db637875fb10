#pragma once
// A seeded, counter-based random source: draw k of stream (seed) depends only on (seed, k),
// so its whole state is two integers that a checkpoint can store.
#include <cstdint>

#include "mantissa/tensor/tensor.hpp"

namespace mantissa::tensor {

struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;
};

// Data parallel: the share of a batch one process of a job holds, part `index` of `parts`
// equal, contiguous parts (rank r of N holds samples [r*b, (r+1)*b) of every batch).
struct BatchPart {
  std::int64_t index = 0;
  std::int64_t parts = 1;
};

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : state_{seed, 0} {}

  std::uint64_t next_u64();  // 64 random bits
  double uniform();          // in [0, 1), 53 bits
  double normal();           // standard normal (Box-Muller)

  // Fills a tensor (any format; values rounded to it).
  void fill_uniform(Tensor& t, float low, float high);
  void fill_normal(Tensor& t, float mean, float stddev);

  RngState state() const { return state_; }
  void set_state(const RngState& s) { state_ = s; }

  // Blocks: the draws for one tensor over a batch, one per element in order (dropout's mask),
  // where the tensor is batch-major, so that a process holding part p of P of the batch holds
  // elements [p*n, (p+1)*n) of the whole batch's P*n. Between begin_block(n) and end_block(n)
  // a process draws n values for its n elements; with a part set, begin_block skips the draws
  // of the parts before it (p*n) and end_block those after it ((P-1-p)*n). So the processes'
  // blocks, in part order, hold exactly the values one process would draw for the whole batch,
  // and every process's state (seed, counter) stays the same: a checkpoint of any one serves
  // all, whatever the number of parts it resumes with. Without a part (0 of 1) both do nothing.
  void set_block_part(const BatchPart& part);  // throws mantissa::Error unless 0 <= index < parts
  const BatchPart& block_part() const { return part_; }
  void begin_block(std::int64_t n);
  void end_block(std::int64_t n);

 private:
  RngState state_;
  BatchPart part_;
};

}  // namespace mantissa::tensor
