#pragma once
// Internal: reductions over a row in a fixed order that the compiler vectorizes.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace mantissa::kernels::detail {

// Sums of f(c) over c in [0, n) in kLanes interleaved partial sums (lane l takes the c with
// c % kLanes == l, in increasing c), then the lanes in order: a fixed order (the same bits on
// every CPU and thread count) that the compiler turns into vector adds, where one running
// float sum would wait on each add in turn. `f` returns the terms of every sum at once.
constexpr int kLanes = 16;
template <int Sums, class F>
std::array<float, Sums> lane_sums(std::int64_t n, F&& f) {
  float acc[Sums][kLanes] = {};
  std::int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const std::array<float, Sums> t = f(c + l);
      for (int k = 0; k < Sums; ++k) acc[k][l] += t[k];
    }
  }
  for (; c < n; ++c) {
    const std::array<float, Sums> t = f(c);
    for (int k = 0; k < Sums; ++k) acc[k][c % kLanes] += t[k];
  }
  std::array<float, Sums> out{};
  for (int k = 0; k < Sums; ++k) {
    for (int l = 0; l < kLanes; ++l) out[k] += acc[k][l];
  }
  return out;
}

// The largest of x[0..n) (NaNs ignored; -inf when there is none): kLanes running maxima,
// vectorized. Exact, so its order does not matter.
inline float row_max(const float* x, std::int64_t n) {
  float m[kLanes];
  std::fill(m, m + kLanes, -std::numeric_limits<float>::infinity());
  std::int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) m[l] = std::max(m[l], x[c + l]);
  }
  for (; c < n; ++c) m[0] = std::max(m[0], x[c]);
  float out = m[0];
  for (int l = 1; l < kLanes; ++l) out = std::max(out, m[l]);
  return out;
}

}  // namespace mantissa::kernels::detail
