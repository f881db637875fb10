// Compiled with -mavx512f -mavx512bw; entered only where the active SIMD path is avx512.
#include "pair_panels_avx512.hpp"

#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include <algorithm>

namespace mantissa::kernels::gemm_detail {
namespace {

__mmask16 first(std::int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// The 16-bit values x[i] for the lanes i set in m (the others zero), as 32-bit words.
__m512i widen(__mmask16 m, const std::uint16_t* x) {
  const __m512i v = _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), x);
  return _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v));
}

// r[j] <- column j of the 16 x 16 block whose row i is r[i]: a 4 x 4 transpose inside each
// 128-bit lane (32- then 64-bit unpacks), then the lanes moved across registers.
inline __attribute__((always_inline)) void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + c]: lane L holds column 4L + c of rows 4g .. 4g + 3.
  __m512i u[16];
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);  // lanes 0, 2 of groups 0, 1
    const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xDD);  // lanes 1, 3
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);       // column c
    r[8 + c] = _mm512_shuffle_i32x4(v0, w0, 0xDD);   // column 8 + c
    r[4 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);   // column 4 + c
    r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xDD);  // column 12 + c
  }
}

// The transposed block (columns j < cols as rows of out, `lanes` words each: the rows past
// those loaded are zero).
void store_block(__m512i r[16], std::int64_t cols, std::int64_t lanes, std::uint32_t* out,
                 std::int64_t ldo) {
  transpose16(r);
  const __mmask16 m = first(lanes);
  for (std::int64_t j = 0; j < cols; ++j) _mm512_mask_storeu_epi32(out + j * ldo, m, r[j]);
}

}  // namespace

void transpose_words_avx512(const std::uint16_t* x, std::int64_t rows, std::int64_t cols,
                            std::int64_t ld, std::uint32_t* out, std::int64_t ldo,
                            std::int64_t out_rows) {
  for (std::int64_t i0 = 0; i0 < out_rows; i0 += 16) {
    const std::int64_t have = std::clamp<std::int64_t>(rows - i0, 0, 16);
    const std::int64_t lanes = std::min<std::int64_t>(16, out_rows - i0);
    for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
      const std::int64_t w = std::min<std::int64_t>(16, cols - j0);
      if (have == 16 && w == 16 && lanes == 16) {  // a whole block, in registers throughout
        __m512i r[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(x + (i0 + i) * ld + 2 * j0);
        transpose16(r);
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) _mm512_storeu_si512(out + (j0 + j) * ldo + i0, r[j]);
        continue;
      }
      const __mmask16 m = first(w);
      __m512i r[16];
      for (std::int64_t i = 0; i < 16; ++i) {
        r[i] = i < have ? _mm512_maskz_loadu_epi32(m, x + (i0 + i) * ld + 2 * j0)
                        : _mm512_setzero_si512();
      }
      store_block(r, w, lanes, out + j0 * ldo + i0, ldo);
    }
  }
}

void interleave_rows_transposed_avx512(const std::uint16_t* base, std::int64_t ld, std::int64_t kc,
                                       std::int64_t lines, std::uint32_t* dst, std::int64_t ldd) {
  const std::int64_t pairs = (kc + 1) / 2;
  for (std::int64_t l0 = 0; l0 < lines; l0 += 16) {
    const std::int64_t w = std::min<std::int64_t>(16, lines - l0);
    const __mmask16 m = first(w);
    for (std::int64_t p0 = 0; p0 < pairs; p0 += 16) {
      const std::int64_t h = std::min<std::int64_t>(16, pairs - p0);
      __m512i r[16];  // r[i]: pair p0 + i of lines l0 .. l0 + 15
      for (std::int64_t i = 0; i < 16; ++i) {
        if (i >= h) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const std::int64_t k = 2 * (p0 + i);
        const __m512i even = widen(m, base + k * ld + l0);
        __m512i word = even;
        if (k + 1 < kc) {
          const __m512i odd = widen(m, base + (k + 1) * ld + l0);
          word = _mm512_or_si512(even, _mm512_slli_epi32(odd, 16));
        }
        r[i] = word;
      }
      store_block(r, w, h, dst + l0 * ldd + p0, ldd);
    }
  }
}

void pair_panels_across_avx512(const std::uint16_t* base, std::int64_t ld, std::int64_t kc,
                               std::int64_t cols, int width, std::int64_t padded,
                               std::uint32_t* dst) {
  const std::int64_t panels = (cols + width - 1) / width;
  const std::int64_t pairs = (kc + 1) / 2;
  for (std::int64_t p = 0; p < pairs; ++p) {
    const std::uint16_t* even = base + 2 * p * ld;
    const std::uint16_t* odd = 2 * p + 1 < kc ? even + ld : nullptr;
    for (std::int64_t q = 0; q < panels; ++q) {
      std::uint32_t* out = dst + q * padded * width + p * width;
      for (std::int64_t j = 0; j < width; j += 16) {  // lanes past the panel's end not stored
        const std::int64_t c = q * width + j;
        const __mmask16 m = first(std::max<std::int64_t>(0, cols - c));
        const __m512i lo = widen(m, even + c);
        const __m512i hi = odd != nullptr ? widen(m, odd + c) : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(out + j, first(width - j),
                                 _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
    }
  }
  for (std::int64_t q = 0; q < panels; ++q) {
    std::fill(dst + q * padded * width + pairs * width, dst + (q + 1) * padded * width, 0u);
  }
}

}  // namespace mantissa::kernels::gemm_detail
