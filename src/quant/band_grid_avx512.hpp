#pragma once
// Internal, for files compiled with -mavx512f -mavx512bw only: 16 float32 lanes rounded to an
// element format's grid (BandGrid: nearest-even, saturating) and their codes, in float32 bit
// arithmetic. Infinities and NaNs are not taken (nonfinite16 finds them; the callers send
// those lanes through the codec). Used by the block quantizers' bands and the fp8 cast.
#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "block_bands_avx512.hpp"

namespace mantissa::quant::detail {

// 16 finite y rounded to the grid whose smallest normal is lo, whose subnormal spacing is
// magic's ulp and whose largest value is top: normal magnitudes keep `shift` fewer bits
// (nearest-even on the bits), smaller ones round to the spacing by one float add; saturated
// at top; the sign kept. As band_grid_avx2.hpp's round8.
inline __m512 round16(__m512 y, int shift, __m512 lo, __m512 magic, __m512 top) {
  const __m512i sign_mask = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i yb = _mm512_castps_si512(y);
  const __m512i b = _mm512_andnot_si512(sign_mask, yb);
  const __m512 a = _mm512_castsi512_ps(b);
  const __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(b, static_cast<unsigned>(shift)), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_and_si512(
      _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32((1 << (shift - 1)) - 1), lsb)),
      _mm512_set1_epi32(static_cast<int>(~((1u << shift) - 1u))));
  const __m512 small = _mm512_sub_ps(_mm512_add_ps(a, magic), magic);
  const __mmask16 tiny = _mm512_cmp_ps_mask(a, lo, _CMP_LT_OQ);
  __m512 r = _mm512_mask_blend_ps(tiny, _mm512_castsi512_ps(rounded), small);
  r = _mm512_min_ps(r, top);
  return _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(r), _mm512_and_si512(yb, sign_mask)));
}

// y, the element scaled by its tile's encode multiplier, rounded to the element format.
inline __m512 round16(__m512 y, const BandGrid& g) {
  return round16(y, g.shift, _mm512_set1_ps(g.min_normal), _mm512_set1_ps(g.subnormal_magic),
                 _mm512_set1_ps(g.max));
}

// The lanes of y (within m) that are an infinity or NaN.
inline __mmask16 nonfinite16(__m512 y, __mmask16 m) {
  const __m512i mag = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(0x7fffffff));
  return _mm512_mask_cmpgt_epi32_mask(m, mag, _mm512_set1_epi32(0x7f7fffff));
}

// The grid's codes of 16 finite y rounded as round16 rounds them (nearest even, saturated at
// the largest value, the sign kept), from y's bits without making the rounded values: a
// normal magnitude's code is its bits rounded at `shift` less the exponent offset; a smaller
// one's is the count of subnormal spacings in |y| + magic (magic's ulp is the spacing, so
// the float add rounds to it, nearest even, and leaves the count in the low bits). Codes
// grow with the magnitudes they stand for, so the saturation is a minimum with the largest
// value's code.
inline __m512i round_codes16(__m512 y, const BandGrid& g) {
  const __m512i yb = _mm512_castps_si512(y);
  const __m512i b = _mm512_and_si512(yb, _mm512_set1_epi32(0x7fffffff));
  const auto shift = static_cast<unsigned>(g.shift);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, shift), _mm512_set1_epi32(1));
  const __m512i normal = _mm512_sub_epi32(
      _mm512_srli_epi32(
          _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32((1 << (g.shift - 1)) - 1), lsb)),
          shift),
      _mm512_set1_epi32(static_cast<int>(g.normal_offset)));
  const __m512 magic = _mm512_set1_ps(g.subnormal_magic);
  const __m512i sub =
      _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(b), magic)),
                       _mm512_castps_si512(magic));
  const __mmask16 tiny = _mm512_cmplt_epu32_mask(
      b, _mm512_set1_epi32(static_cast<int>(std::bit_cast<std::uint32_t>(g.min_normal))));
  const std::uint32_t top_code = (std::bit_cast<std::uint32_t>(g.max) >> shift) - g.normal_offset;
  const __m512i code = _mm512_min_epu32(_mm512_mask_blend_epi32(tiny, normal, sub),
                                        _mm512_set1_epi32(static_cast<int>(top_code)));
  return _mm512_or_si512(
      code, _mm512_slli_epi32(_mm512_srli_epi32(yb, 31), static_cast<unsigned>(g.sign_bit)));
}

// code with its lanes `bad` (infinities and NaNs of y) replaced by the codec's codes of y.
inline __m512i codec_codes(__m512 y, __m512i code, __mmask16 bad, const ElementCodec& codec) {
  alignas(64) float yl[16];
  alignas(64) std::uint32_t cl[16];
  _mm512_store_ps(yl, y);
  _mm512_store_si512(cl, code);
  for (int i = 0; i < 16; ++i) {
    if ((bad >> i) & 1u) cl[i] = codec.code(codec.ctx, yl[i]);
  }
  return _mm512_load_si512(cl);
}

}  // namespace mantissa::quant::detail
