// Compiled with -mavx512f -mavx512bw; entered only when numerics::active_simd_path() is avx512
// (fp8_cast.cpp). The scaled values rounded and coded as the block quantizers' bands do
// (band_grid_avx512.hpp); the tally in the same pass, on the magnitudes' bits.
#include "fp8_cast_avx512.hpp"

#include <immintrin.h>

#include "band_grid_avx512.hpp"
#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::quant::detail {

void fp8_cast_avx512(const void* x, bool bf16, std::int64_t n, float scale, const BandGrid& g,
                     const ElementCodec& codec, std::uint32_t max_finite,
                     std::uint32_t half_subnormal, Fp8Tally& tally, std::uint8_t* dst) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i over_bits = _mm512_set1_epi32(static_cast<int>(max_finite));
  const __m512i under_bits = _mm512_set1_epi32(static_cast<int>(half_subnormal));
  __m512i top = _mm512_set1_epi32(static_cast<int>(tally.amax));
  // Per-lane counts, added into the tally every block of 2^24 values (a lane's count stays
  // far below 2^31).
  constexpr std::int64_t kBlock = std::int64_t{1} << 24;
  const __m512i one = _mm512_set1_epi32(1);
  for (std::int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const std::int64_t b1 = n - b0 > kBlock ? b0 + kBlock : n;
    __m512i over = _mm512_setzero_si512(), under = _mm512_setzero_si512();
    for (std::int64_t i = b0; i < b1; i += 16) {
      const __mmask16 m = b1 - i >= 16 ? static_cast<__mmask16>(0xffff)
                                       : static_cast<__mmask16>((1u << (b1 - i)) - 1u);
      __m512 v;
      if (bf16) {
        const __m512i h = _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m),
                                                   static_cast<const std::uint16_t*>(x) + i);
        v = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
      } else {
        v = _mm512_maskz_loadu_ps(m, static_cast<const float*>(x) + i);
      }
      const __m512 y = _mm512_mul_ps(v, s);
      const __m512i a = _mm512_and_si512(_mm512_castps_si512(v), magnitude);
      const __m512i b = _mm512_and_si512(_mm512_castps_si512(y), magnitude);
      top = _mm512_max_epu32(top, a);  // masked-off lanes are 0
      // past the max, NaN excluded; nonzero and rounding to 0, NaN excluded
      over = _mm512_mask_add_epi32(
          over, _mm512_mask_cmpgt_epu32_mask(m, b, over_bits) & _mm512_cmple_epu32_mask(b, inf),
          over, one);
      under = _mm512_mask_add_epi32(
          under, _mm512_mask_test_epi32_mask(m, a, a) & _mm512_cmple_epu32_mask(b, under_bits),
          under, one);
      __m512i code = round_codes16(y, g);
      if (const __mmask16 bad = nonfinite16(y, m); bad != 0)
        code = codec_codes(y, code, bad, codec);
      _mm512_mask_cvtepi32_storeu_epi8(dst + i, m, code);
    }
    tally.overflows += _mm512_reduce_add_epi32(over);
    tally.underflows += _mm512_reduce_add_epi32(under);
  }
  tally.amax = _mm512_reduce_max_epu32(top);
}

}  // namespace mantissa::quant::detail
