#pragma once
// Internal, for the files compiled with -mavx512f -mavx512bw (numerics and kernels, after
// <immintrin.h>): bfloat16's codec 16 lanes at a time, shared by the bulk conversions, the
// pointwise kernels and the attention rows so that they agree bit for bit with the scalar
// codec.
#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::numerics::avx512 {

// The bfloat16 halves of 16 float32 patterns u: nearest even (or toward zero), NaN quieted
// with its payload's top bits, in the low 16 bits of each lane.
inline __m512i bf16_halves(__m512i u, bool nearest) {
  const __m512i top = _mm512_srli_epi32(u, 16);
  __m512i h = top;
  if (nearest) {
    const __m512i lsb = _mm512_and_si512(top, _mm512_set1_epi32(1));
    h = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))),
                          16);
  }
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(h, nan, top, _mm512_set1_epi32(0x40));
}

// The float32 patterns of 16 bfloat16 values h, NaN quieted.
inline __m512i bf16_widened(__m256i h) {
  const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000));
}

// Whether one of 16 float32 patterns u is subnormal: AVX512-BF16's conversion instructions
// (VCVTNEPS2BF16, VCVTNE2PS2BF16; nearest even and NaN quieted as bf16_halves does) flush
// those to zero, so a vector holding one is rounded by bf16_halves instead.
inline bool any_subnormal(__m512i u) {
  const __mmask16 no_exponent = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_test_epi32_mask(no_exponent, u, _mm512_set1_epi32(0x007FFFFF)) != 0;
}

}  // namespace mantissa::numerics::avx512
