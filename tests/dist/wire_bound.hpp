#pragma once
// The error bounds of an average and of a sum over a bfloat16 wire (docs/distributed.md
// derives them).
#include <cmath>

namespace mantissa::testing {

// |result - mean| <= A [u + g(1+u) + (2v+v^2)(1+g)(1+u) + u(1+v)^2(1+g)(1+u)], A = mean |g_r|,
// u = 2^-8 (bfloat16 rounding, twice: onto the wire and the result), v = 2^-24 (float32),
// g = (N-1)v / (1 - (N-1)v) (the float32 sum of N terms). Values in bfloat16's normal range.
inline double bfloat16_wire_bound(int ranks, double mean_abs) {
  const double u = std::ldexp(1.0, -8), v = std::ldexp(1.0, -24);
  const double g = (ranks - 1) * v / (1 - (ranks - 1) * v);
  return mean_abs * (u + g * (1 + u) + (2 * v + v * v) * (1 + g) * (1 + u) +
                     u * (1 + v) * (1 + v) * (1 + g) * (1 + u));
}

// The sum (no multiplication by 1/N) of the same: |result - sum| <= S [u + g(1+u) +
// u(1+g)(1+u)], S = sum |g_r|.
inline double bfloat16_wire_sum_bound(int ranks, double sum_abs) {
  const double u = std::ldexp(1.0, -8), v = std::ldexp(1.0, -24);
  const double g = (ranks - 1) * v / (1 - (ranks - 1) * v);
  return sum_abs * (u + g * (1 + u) + u * (1 + g) * (1 + u));
}

}  // namespace mantissa::testing
