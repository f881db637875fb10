// Compiled with -mavx512f -mavx512bw; entered only when numerics::active_simd_path() is avx512
// (pool.cpp). A 2 x 2, stride 2 window's four candidates as four vectors of 16 windows: the
// two input rows' 32 values each, split into even and odd columns by a two-source permute
// (float32) or a shift and a mask (bfloat16, a column pair per 32-bit word); masked loads and
// stores take any width (Fashion-MNIST's 14 x 14 planes have 7 windows a row, which the AVX2
// path left to the scalar loop).
#include "pool_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

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

// A row of windows' four candidates (16 windows, the first at ox0): the window maxima above
// zero (+0 where none is) and the inputs that won them (-1 where none did).
struct Winners {
  __m512 y;
  __m512i at;
};
inline Winners winners(__m512 a, __m512 b, __m512 c, __m512 d, std::int64_t width, std::int64_t oy,
                       std::int64_t ox0) {
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i base = window_base(width, oy, ox0);
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
  return {_mm512_maskz_mov_ps(positive, best),
          _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), positive, at)};
}

// 0 + g where the window's winner is its input at `offset` from the window's first (as the
// scatter's += onto zeros: a -0 gradient arrives as +0), +0 elsewhere.
inline __m512 routed(__m512 g, __m512i at, __m512i base, int offset) {
  const __mmask16 here =
      _mm512_cmpeq_epi32_mask(at, _mm512_add_epi32(base, _mm512_set1_epi32(offset)));
  return _mm512_add_ps(_mm512_setzero_ps(), _mm512_maskz_mov_ps(here, g));
}

// 16 windows' column pairs of a bfloat16 row (n <= 16 windows from p on) as float32: even
// columns in the low halves of the 32-bit words, odd in the high.
inline void split_bf16(const std::uint16_t* p, std::int64_t n, __m512& even, __m512& odd) {
  const __m512i words = _mm512_maskz_loadu_epi32(first(n), p);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
  odd = _mm512_castsi512_ps(
      _mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// even and odd float32 bfloat16 values back into n column pairs from p on.
inline void merge_bf16(std::uint16_t* p, std::int64_t n, __m512 even, __m512 odd) {
  const __m512i words = _mm512_or_si512(
      _mm512_srli_epi32(_mm512_castps_si512(even), 16),
      _mm512_and_si512(_mm512_castps_si512(odd), _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  _mm512_mask_storeu_epi32(p, first(n), words);
}

}  // namespace

namespace {

// Output row oy of a plane, 16 windows a step: split(row, n, even, odd) reads n windows'
// column pairs of an input row as float32, store(i, n, y) writes n outputs from output i on.
template <class T, class Split, class Store>
void pool_row(const T* xp, std::int64_t width, std::int64_t oy, std::int32_t* ap, Split&& split,
              Store&& store) {
  const std::int64_t ow = width / 2;
  const T* r0 = xp + 2 * oy * width;
  const T* r1 = r0 + width;
  for (std::int64_t ox = 0; ox < ow; ox += 16) {
    const std::int64_t n = std::min<std::int64_t>(16, ow - ox);
    __m512 a, b, c, d;
    split(r0 + 2 * ox, n, a, b);
    split(r1 + 2 * ox, n, c, d);
    const Winners w = winners(a, b, c, d, width, oy, ox);
    store(oy * ow + ox, n, w.y);
    _mm512_mask_storeu_epi32(ap + oy * ow + ox, first(n), w.at);
  }
}

}  // namespace

void relu_max_pool_2x2_row_avx512(const float* xp, std::int64_t width, std::int64_t oy, float* yp,
                                  std::int32_t* ap) {
  pool_row(xp, width, oy, ap, split, [&](std::int64_t i, std::int64_t n, __m512 y) {
    _mm512_mask_storeu_ps(yp + i, first(n), y);
  });
}

void relu_max_pool_2x2_row_bf16_avx512(const std::uint16_t* xp, std::int64_t width, std::int64_t oy,
                                       std::uint16_t* yp, std::int32_t* ap) {
  pool_row(xp, width, oy, ap, split_bf16, [&](std::int64_t i, std::int64_t n, __m512 y) {
    // A candidate or +0: a bfloat16 value, its high half exact.
    _mm512_mask_cvtepi32_storeu_epi16(yp + i, first(n),
                                      _mm512_srli_epi32(_mm512_castps_si512(y), 16));
  });
}

namespace {

// One plane's input gradient from its windows' gradients, a row of 16 windows at a time:
// load(oy, ox, n) gives the windows' gradients as float32, store(row, ox, n, even, odd) puts
// the two columns of each window's inputs in a row; the columns and rows outside every
// window get +0 from clear(row, column) and clear_row(row).
template <class Load, class Store, class Clear, class ClearRow>
void backward_plane(const std::int32_t* argmax, std::int64_t height, std::int64_t width,
                    Load&& load, Store&& store, Clear&& clear, ClearRow&& clear_row) {
  const std::int64_t oh = height / 2, ow = width / 2;
  for (std::int64_t oy = 0; oy < oh; ++oy) {
    for (std::int64_t ox = 0; ox < ow; ox += 16) {
      const std::int64_t n = std::min<std::int64_t>(16, ow - ox);
      const __m512 g = load(oy * ow + ox, n);
      const __m512i at = _mm512_maskz_loadu_epi32(first(n), argmax + oy * ow + ox);
      const __m512i base = window_base(width, oy, ox);
      store(2 * oy, ox, n, routed(g, at, base, 0), routed(g, at, base, 1));
      store(2 * oy + 1, ox, n, routed(g, at, base, static_cast<int>(width)),
            routed(g, at, base, static_cast<int>(width) + 1));
    }
    // An odd width's last column belongs to no window.
    if (width % 2 != 0) {
      clear(2 * oy, width - 1);
      clear(2 * oy + 1, width - 1);
    }
  }
  // An odd height's last row belongs to no window.
  if (height % 2 != 0) clear_row(height - 1);
}

}  // namespace

void relu_max_pool_2x2_backward_avx512(const float* dy, const std::int32_t* argmax,
                                       std::int64_t height, std::int64_t width, float* dx) {
  backward_plane(
      argmax, height, width,
      [&](std::int64_t i, std::int64_t n) { return _mm512_maskz_loadu_ps(first(n), dy + i); },
      [&](std::int64_t row, std::int64_t ox, std::int64_t n, __m512 even, __m512 odd) {
        merge(dx + row * width + 2 * ox, n, even, odd);
      },
      [&](std::int64_t row, std::int64_t col) { dx[row * width + col] = 0.0f; },
      [&](std::int64_t row) { std::fill(dx + row * width, dx + (row + 1) * width, 0.0f); });
}

void relu_max_pool_2x2_backward_bf16_avx512(const std::uint16_t* dy, const std::int32_t* argmax,
                                            std::int64_t height, std::int64_t width,
                                            std::uint16_t* dx) {
  backward_plane(
      argmax, height, width,
      [&](std::int64_t i, std::int64_t n) {
        const __m256i words = _mm512_castsi512_si256(
            _mm512_maskz_loadu_epi16(static_cast<__mmask32>(first(n)), dy + i));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(words), 16));
      },
      // 0 + dy of a bfloat16 dy is dy (a NaN quieted, as its rounding to bfloat16 would).
      [&](std::int64_t row, std::int64_t ox, std::int64_t n, __m512 even, __m512 odd) {
        merge_bf16(dx + row * width + 2 * ox, n, even, odd);
      },
      [&](std::int64_t row, std::int64_t col) { dx[row * width + col] = 0; },
      [&](std::int64_t row) {
        std::fill(dx + row * width, dx + (row + 1) * width, std::uint16_t{0});
      });
}

}  // namespace mantissa::kernels::detail
