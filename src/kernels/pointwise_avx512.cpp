// Compiled with -mavx512f; entered only where the active SIMD path is avx512.
#include "pointwise_avx512.hpp"

#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

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

__mmask16 first(std::int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

}  // namespace

void gelu_forward_avx512(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 e = exp_minus_2u(v);
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
  }
}

void gelu_backward_avx512(const float* x, const float* dy, float* dx, std::int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
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
    _mm512_mask_storeu_ps(dx + i, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dy + i), _mm512_add_ps(s, slope)));
  }
}

}  // namespace mantissa::kernels::detail
