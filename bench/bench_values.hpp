#pragma once
// The benchmarks' inputs: normally distributed values (mean 0, deviation 1) from a seed, as
// float32 or stored in a format's own width.
#include <cstdint>
#include <random>
#include <vector>

#include "mantissa/numerics/convert.hpp"

namespace mantissa::bench_inputs {

inline std::vector<float> normal_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// n such values of format f, stored in f's own width (float32 when f is float32).
inline std::vector<std::uint8_t> stored_values(std::size_t n, numerics::Format f, unsigned seed) {
  const std::vector<float> v = normal_values(n, seed);
  std::vector<std::uint8_t> out(n * static_cast<std::size_t>(numerics::traits(f).storage_bytes));
  numerics::encode_array(v.data(), n, f, out.data());
  return out;
}

}  // namespace mantissa::bench_inputs
