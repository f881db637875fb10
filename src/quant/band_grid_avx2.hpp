#pragma once
// Internal, AVX2 (the library's baseline): 8 float32 lanes rounded to an element format's grid
// (BandGrid: nearest-even, saturating), in y's scale or, for a plain tile, in x's own, and the
// rounded elements' codes, in float32 bit arithmetic. Infinities and NaNs are not taken
// (nonfinite8 finds them; the callers send those lanes through the codec). The 8-lane twin of
// band_grid_avx512.hpp, used by the AVX2 band bodies (block_bands_avx2.cpp).
#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "block_bands_avx512.hpp"

namespace mantissa::quant::detail::avx2 {

inline __m256i set1(std::uint32_t v) {
  return _mm256_set1_epi32(static_cast<int>(v));
}

// 8 finite y rounded to the grid whose smallest normal is lo, whose subnormal spacing is
// magic's ulp and whose largest value is top: normal magnitudes keep `shift` fewer bits
// (nearest-even on the bits), smaller ones round to the spacing by one float add; saturated
// at top; the sign kept.
inline __m256 round8(__m256 y, int shift, __m256 lo, __m256 magic, __m256 top) {
  const __m256i yb = _mm256_castps_si256(y);
  const __m256i b = _mm256_and_si256(yb, set1(0x7fffffffu));
  const __m256 a = _mm256_castsi256_ps(b);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, shift), set1(1));
  const __m256i rounded =
      _mm256_and_si256(_mm256_add_epi32(b, _mm256_add_epi32(set1((1u << (shift - 1)) - 1u), lsb)),
                       set1(~((1u << shift) - 1u)));
  const __m256 small = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
  __m256 r =
      _mm256_blendv_ps(_mm256_castsi256_ps(rounded), small, _mm256_cmp_ps(a, lo, _CMP_LT_OQ));
  r = _mm256_min_ps(r, top);
  return _mm256_or_ps(r, _mm256_castsi256_ps(_mm256_and_si256(yb, set1(0x80000000u))));
}

// y, the element scaled by its tile's encode multiplier, rounded to the element format.
inline __m256 round8(__m256 y, const BandGrid& g) {
  return round8(y, g.shift, _mm256_set1_ps(g.min_normal), _mm256_set1_ps(g.subnormal_magic),
                _mm256_set1_ps(g.max));
}

// The magnitudes of 8 elements x of a plain tile (BandScales) rounded to the grid in x's own
// scale, whose subnormal spacing is magic's ulp and whose largest value is top: |x| plus c
// minus c, where c = max(2^(e + shift), magic) for |x|'s binade 2^e, rounds |x| to the
// spacing of its binade (or the subnormal spacing below the smallest normal) nearest-even in
// one float add, as round8's two ways do; saturated at top. The sign is the caller's.
inline __m256 round_plain8(__m256 x, int shift, __m256 magic, __m256 top) {
  const __m256i a = _mm256_and_si256(_mm256_castps_si256(x), set1(0x7fffffffu));
  const __m256i binade = _mm256_add_epi32(_mm256_and_si256(a, set1(0x7f800000u)),
                                          set1(static_cast<std::uint32_t>(shift) << 23));
  const __m256 c = _mm256_castsi256_ps(_mm256_max_epi32(binade, _mm256_castps_si256(magic)));
  const __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_castsi256_ps(a), c), c);
  return _mm256_min_ps(r, top);
}

// The lanes of y that are an infinity or NaN, as a movemask.
inline int nonfinite8(__m256 y) {
  const __m256i mag = _mm256_and_si256(_mm256_castps_si256(y), set1(0x7fffffffu));
  return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(mag, set1(0x7f7fffffu))));
}

// The grid's codes of 8 finite y rounded as round8 rounds them, straight from y's bits (the
// 8-lane twin of band_grid_avx512.hpp's round_codes16): a normal magnitude's code is its bits
// rounded at `shift` less the exponent offset, a smaller one's the count of subnormal
// spacings in |y| + magic, the saturation a minimum with the largest value's code.
inline __m256i round_codes8(__m256 y, const BandGrid& g) {
  const __m256i yb = _mm256_castps_si256(y);
  const __m256i b = _mm256_and_si256(yb, set1(0x7fffffffu));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, g.shift), set1(1));
  const __m256i normal = _mm256_sub_epi32(
      _mm256_srli_epi32(
          _mm256_add_epi32(b, _mm256_add_epi32(set1((1u << (g.shift - 1)) - 1u), lsb)), g.shift),
      set1(g.normal_offset));
  const __m256 magic = _mm256_set1_ps(g.subnormal_magic);
  const __m256i sub =
      _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(b), magic)),
                       _mm256_castps_si256(magic));
  // b and the smallest normal's bits are below 2^31: a signed compare orders them.
  const __m256i tiny = _mm256_cmpgt_epi32(set1(std::bit_cast<std::uint32_t>(g.min_normal)), b);
  const std::uint32_t top_code = (std::bit_cast<std::uint32_t>(g.max) >> g.shift) - g.normal_offset;
  const __m256i code = _mm256_min_epu32(_mm256_blendv_epi8(normal, sub, tiny), set1(top_code));
  return _mm256_or_si256(
      code, _mm256_slli_epi32(_mm256_srli_epi32(yb, 31), static_cast<int>(g.sign_bit)));
}

// The grid's codes of 8 rounded elements q (sign from q's bit 31): a normal's code from its
// float32 bits, a subnormal's from its magnitude over the spacing.
inline __m256i codes8(__m256 q, const BandGrid& g) {
  const __m256i qb = _mm256_castps_si256(q);
  const __m256i ab = _mm256_and_si256(qb, set1(0x7fffffffu));
  const __m256 a = _mm256_castsi256_ps(ab);
  const __m256i normal = _mm256_sub_epi32(_mm256_srli_epi32(ab, g.shift), set1(g.normal_offset));
  const __m256i sub = _mm256_cvtps_epi32(_mm256_mul_ps(a, _mm256_set1_ps(g.inv_spacing)));
  const __m256i code = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(sub), _mm256_castsi256_ps(normal),
                       _mm256_cmp_ps(a, _mm256_set1_ps(g.min_normal), _CMP_GE_OQ)));
  return _mm256_or_si256(
      code, _mm256_slli_epi32(_mm256_srli_epi32(qb, 31), static_cast<unsigned>(g.sign_bit)));
}

}  // namespace mantissa::quant::detail::avx2
