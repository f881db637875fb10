#pragma once
// Internal, for pointwise_avx512.cpp and pointwise_avx512_bf16.cpp (compiled with -mavx512f
// -mavx512bw, the second also -mavx512bf16, after <immintrin.h>): GELU and its slope on 16
// float32 lanes, the ops of the bfloat16 kernels as functors, and the loop that runs one over
// bfloat16 arrays with a given rounding, so that both files compute the same bits.
#include <immintrin.h>

#include <cstdint>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include "bf16_lanes_avx512.hpp"
#include "pointwise_avx512.hpp"
#include "vector_exp_avx512.hpp"

namespace mantissa::kernels::detail {

constexpr float kA = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kB = 0.044715f;

// exp(-2u) for u = kA (v + kB v^3), in the AVX2 path's order of operations.
inline __m512 exp_minus_2u(__m512 v) {
  const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(kB), v), v), v);
  return exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f * kA), _mm512_add_ps(v, cube)));
}

// GELU of 16 lanes.
[[gnu::always_inline]] inline __m512 gelu16(__m512 v) {
  return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_minus_2u(v)));
}

// GELU's derivative at v times dy, 16 lanes.
[[gnu::always_inline]] inline __m512 gelu_slope16(__m512 v, __m512 dy) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, exp_minus_2u(v)));
  // du = kA (1 + 3 kB min(v^2, cap)); dx = dy (s + v s (1 - s) 2 du)
  const __m512 square =
      _mm512_min_ps(_mm512_set1_ps(kGeluSquareCap), _mm512_mul_ps(v, v));  // NaN kept
  const __m512 du = _mm512_mul_ps(
      _mm512_set1_ps(kA), _mm512_add_ps(one, _mm512_mul_ps(_mm512_set1_ps(3.0f * kB), square)));
  const __m512 slope =
      _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(v, s), _mm512_sub_ps(one, s)),
                                  _mm512_set1_ps(2.0f)),
                    du);
  return _mm512_mul_ps(dy, _mm512_add_ps(s, slope));
}

// The bfloat16 kernels' ops on float32 lanes.
struct GeluForward16 {
  __m512 operator()(__m512 v) const { return gelu16(v); }
};
struct GeluBackward16 {
  __m512 operator()(__m512 v, __m512 dy) const { return gelu_slope16(v, dy); }
};
struct Add16 {
  __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
};

// 16 lanes rounded to bfloat16 at out by integer arithmetic (every AVX-512 CPU).
struct IntegerRounding {
  static void store(std::uint16_t* out, __m512 v) { store_bf16_16(out, bf16_lanes(v)); }
};

// out = fn(in...) over the bfloat16 arrays, 16 lanes at a time without masks but for the last
// vector (masked loads and stores run slower on some cores, Zen 4 among them); the full
// vectors rounded by Rounding::store.
template <class Rounding, class Fn, class... In>
void map_rounded(std::uint16_t* out, std::int64_t n, Fn fn, const In*... in) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) Rounding::store(out + i, fn(load_bf16_16_raw(in + i)...));
  if (i < n) {
    const __mmask16 m = lanes16(n - i);
    store_bf16_lanes(out + i, m, bf16_lanes(fn(load_bf16_lanes(in + i, m)...)));
  }
}

}  // namespace mantissa::kernels::detail
