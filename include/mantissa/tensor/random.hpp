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

 private:
  RngState state_;
};

}  // namespace mantissa::tensor
