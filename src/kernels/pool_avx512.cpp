// Compiled with -mavx512f; entered only when numerics::active_simd_path() is avx512
// (conv.cpp). A 2 x 2, stride 2 window's four candidates as four vectors of 16 windows: the
// two input rows' 32 values each, split into even and odd columns by a two-source permute;
// masked loads and stores take any width (Fashion-MNIST's 14 x 14 planes have 7 windows a
// row, which the AVX2 path left to the scalar loop).
#include "pool_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace mantissa::kernels::detail {
namespace {

// Lanes 0..n-1 of a 16-lane mask.
inline __mmask16 first(std::int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// The 2n values from p on (n <= 16 windows) as even and odd columns.
inline void split(const float* p, std::int64_t n, __m512& even, __m512& odd) {
  const __m512 lo = _mm512_maskz_loadu_ps(first(2 * n), p);
  const __m512 hi = _mm512_maskz_loadu_ps(first(std::max<std::int64_t>(0, 2 * n - 16)), p + 16);
  const __m512i even_of =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  even = _mm512_permutex2var_ps(lo, even_of, hi);
  odd = _mm512_permutex2var_ps(lo, _mm512_add_epi32(even_of, _mm512_set1_epi32(1)), hi);
}

// even and odd columns back into 2n values from p on.
inline void merge(float* p, std::int64_t n, __m512 even, __m512 odd) {
  const __m512i lo_of = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_of = _mm512_add_epi32(lo_of, _mm512_set1_epi32(8));
  _mm512_mask_storeu_ps(p, first(2 * n), _mm512_permutex2var_ps(even, lo_of, odd));
  _mm512_mask_storeu_ps(p + 16, first(std::max<std::int64_t>(0, 2 * n - 16)),
                        _mm512_permutex2var_ps(even, hi_of, odd));
}

// The input index of window ox0 + lane's first candidate in row pair oy.
inline __m512i window_base(std::int64_t width, std::int64_t oy, std::int64_t ox0) {
  const __m512i lane2 =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(2 * oy * width + 2 * ox0)), lane2);
}

}  // namespace

void relu_max_pool_2x2_row_avx512(const float* xp, std::int64_t width, std::int64_t oy, float* yp,
                                  std::int32_t* ap) {
  const std::int64_t ow = width / 2;
  const float* r0 = xp + 2 * oy * width;
  const float* r1 = r0 + width;
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t ox = 0; ox < ow; ox += 16) {
    const std::int64_t n = std::min<std::int64_t>(16, ow - ox);
    __m512 a, b, c, d;
    split(r0 + 2 * ox, n, a, b);
    split(r1 + 2 * ox, n, c, d);
    const __m512i base = window_base(width, oy, ox);
    // The scalar loop's order: best starts at -inf, a candidate wins when strictly greater
    // (a NaN never does).
    __mmask16 more = _mm512_cmp_ps_mask(a, minus_inf, _CMP_GT_OQ);
    __m512 best = _mm512_mask_mov_ps(minus_inf, more, a);
    __m512i at = base;
    const auto take = [&](__m512 v, int offset) {
      more = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
      best = _mm512_mask_mov_ps(best, more, v);
      at = _mm512_mask_add_epi32(at, more, base, _mm512_set1_epi32(offset));
    };
    take(b, 1);
    take(c, static_cast<int>(width));
    take(d, static_cast<int>(width) + 1);
    const __mmask16 positive = _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __mmask16 lanes = first(n);
    _mm512_mask_storeu_ps(yp + oy * ow + ox, lanes, _mm512_maskz_mov_ps(positive, best));
    _mm512_mask_storeu_epi32(ap + oy * ow + ox, lanes,
                             _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), positive, at));
  }
}

void relu_max_pool_2x2_backward_avx512(const float* dy, const std::int32_t* argmax,
                                       std::int64_t height, std::int64_t width, float* dx) {
  const std::int64_t oh = height / 2, ow = width / 2;
  const __m512 zero = _mm512_setzero_ps();
  for (std::int64_t oy = 0; oy < oh; ++oy) {
    float* d0 = dx + 2 * oy * width;
    float* d1 = d0 + width;
    for (std::int64_t ox = 0; ox < ow; ox += 16) {
      const std::int64_t n = std::min<std::int64_t>(16, ow - ox);
      const __mmask16 lanes = first(n);
      const __m512 g = _mm512_maskz_loadu_ps(lanes, dy + oy * ow + ox);
      const __m512i at = _mm512_maskz_loadu_epi32(lanes, argmax + oy * ow + ox);
      const __m512i base = window_base(width, oy, ox);
      // 0 + dy where this input is the window's argmax (as the scatter's += onto zeros: a
      // -0 gradient arrives as +0), +0 elsewhere.
      const auto to = [&](int offset) {
        const __mmask16 here =
            _mm512_cmpeq_epi32_mask(at, _mm512_add_epi32(base, _mm512_set1_epi32(offset)));
        return _mm512_add_ps(zero, _mm512_maskz_mov_ps(here, g));
      };
      merge(d0 + 2 * ox, n, to(0), to(1));
      merge(d1 + 2 * ox, n, to(static_cast<int>(width)), to(static_cast<int>(width) + 1));
    }
    // An odd width's last column belongs to no window.
    if (width % 2 != 0) d0[width - 1] = d1[width - 1] = 0.0f;
  }
  // An odd height's last row belongs to no window.
  if (height % 2 != 0) std::fill(dx + (height - 1) * width, dx + height * width, 0.0f);
}

}  // namespace mantissa::kernels::detail
