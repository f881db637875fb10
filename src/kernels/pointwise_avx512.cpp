// Compiled with -mavx512f -mavx512bw; entered only where the active SIMD path is avx512.
#include "pointwise_avx512.hpp"

#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include "bf16_lanes_avx512.hpp"
#include "vector_exp_avx512.hpp"

namespace mantissa::kernels::detail {
namespace {

constexpr float kA = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kB = 0.044715f;

// exp(-2u) for u = kA (v + kB v^3), in the AVX2 path's order of operations.
__m512 exp_minus_2u(__m512 v) {
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

}  // namespace

void gelu_forward_avx512(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gelu_backward_avx512(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(
        dx + i, m, gelu_slope16(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, dy + i)));
  }
}

namespace {

// 16 lanes rounded to bfloat16 at out by integer arithmetic (every AVX-512 CPU).
struct IntegerRounding {
  static void store(std::uint16_t* out, __m512 v) { store_bf16_16(out, bf16_lanes(v)); }
};

// The same by AVX512-BF16's conversion instruction (bf16_words_by_unit).
struct UnitRounding {
  __attribute__((target("avx512bf16"))) static void store(std::uint16_t* out, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bf16_words_by_unit(v));
  }
};

// out = fn(in...) over the bfloat16 arrays, 16 lanes at a time without masks but for the last
// vector (masked loads and stores run slower on some cores, Zen 4 among them). Compiled for
// AVX512-BF16 so that UnitRounding inlines; it runs only where the CPU has it.
template <class Rounding, class Fn, class... In>
__attribute__((target("avx512bf16"))) void map_rounded(std::uint16_t* out, std::int64_t n, Fn&& fn,
                                                       const In*... in) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) Rounding::store(out + i, fn(load_bf16_16_raw(in + i)...));
  if (i < n) {
    const __mmask16 m = lanes16(n - i);
    store_bf16_lanes(out + i, m, bf16_lanes(fn(load_bf16_lanes(in + i, m)...)));
  }
}

// map_rounded with UnitRounding, compiled for AVX512-BF16 (so that it inlines there); called
// only where the CPU has it.
template <class Fn, class... In>
__attribute__((target("avx512bf16"))) void map_by_unit(std::uint16_t* out, std::int64_t n, Fn&& fn,
                                                       const In*... in) {
  map_rounded<UnitRounding>(out, n, fn, in...);
}

template <class Fn, class... In>
void bf16_map(bool unit, std::uint16_t* out, std::int64_t n, Fn&& fn, const In*... in) {
  if (unit) {
    map_by_unit(out, n, fn, in...);
  } else {
    map_rounded<IntegerRounding>(out, n, fn, in...);
  }
}

}  // namespace

void gelu_forward_bf16_avx512(const std::uint16_t* x, std::uint16_t* y, std::int64_t n, bool unit) {
  bf16_map(
      unit, y, n, [](__m512 v) { return gelu16(v); }, x);
}

void gelu_backward_bf16_avx512(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                               std::int64_t n, bool unit) {
  bf16_map(
      unit, dx, n, [](__m512 v, __m512 g) { return gelu_slope16(v, g); }, x, dy);
}

void add_bf16_avx512(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                     std::int64_t n, bool unit) {
  bf16_map(
      unit, y, n, [](__m512 u, __m512 v) { return _mm512_add_ps(u, v); }, a, b);
}

namespace {

// 16 float32 lanes from element i of x (bfloat16 bits when Bf16, else float32), masked by m
// when Masked.
template <bool Bf16, bool Masked>
__m512 lanes_at(const void* x, std::int64_t i, __mmask16 m) {
  if constexpr (Bf16) {
    const auto* p = static_cast<const std::uint16_t*>(x) + i;
    return Masked ? load_bf16_lanes(p, m) : load_bf16_16_raw(p);
  } else {
    const auto* p = static_cast<const float*>(x) + i;
    return Masked ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
  }
}

}  // namespace

template <bool A16, bool B16>
void sum_to_float32_avx512(const void* a, const void* b, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i,
                     _mm512_add_ps(lanes_at<A16, false>(a, i, 0), lanes_at<B16, false>(b, i, 0)));
  }
  if (i < n) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(
        y + i, m, _mm512_add_ps(lanes_at<A16, true>(a, i, m), lanes_at<B16, true>(b, i, m)));
  }
}

template void sum_to_float32_avx512<true, true>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<true, false>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<false, true>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<false, false>(const void*, const void*, float*, std::int64_t);

void add_bf16_rows_avx512(const std::uint16_t* g, std::int64_t rows, std::int64_t ld,
                          std::int64_t n, float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint16_t* row = g + r * ld;
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      _mm512_storeu_ps(sums + j,
                       _mm512_add_ps(_mm512_loadu_ps(sums + j), load_bf16_16_raw(row + j)));
    }
    if (j < n) {
      const __mmask16 m = lanes16(n - j);
      _mm512_mask_storeu_ps(
          sums + j, m,
          _mm512_add_ps(_mm512_maskz_loadu_ps(m, sums + j), load_bf16_lanes(row + j, m)));
    }
  }
}

}  // namespace mantissa::kernels::detail
