#pragma once
// Internal, for the files compiled with -mavx2 (numerics and kernels): cbfloat16's fast decode of 8
// values, shared by the bulk decode, the GEMM's packing and the layer norm's rows so that they
// agree bit for bit.
#include <immintrin.h>

namespace mantissa::numerics::avx2 {

// The float32 bits of 8 cbfloat16 (1/6/9, bias 31) magnitudes `mag` (the 15 bits below the
// sign, one per 32-bit lane, exponent field below the top one: no infinity or NaN). Normal
// numbers move their fields into float32's place and add 96 to the exponent (integer
// arithmetic); subnormals and zero (exponent field 0) are mantissa x 2^-39, one exact
// conversion and one exact multiply whose operands and result are float32 normal numbers or
// zero. No lane is ever a float32 subnormal, so the FTZ and DAZ flags cannot change a result.
inline __m256i cbfloat16_magnitudes8(__m256i mag) {
  const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 14), _mm256_set1_epi32(96 << 23));
  const __m256 small = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(0x1p-39f));
  return _mm256_blendv_epi8(normal, _mm256_castps_si256(small),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(1 << 9), mag));
}

}  // namespace mantissa::numerics::avx2
