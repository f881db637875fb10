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
  std::int64_t over = 0, under = 0;
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
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
    over += __builtin_popcount(_mm512_mask_cmpgt_epu32_mask(m, b, over_bits) &
                               _mm512_mask_cmple_epu32_mask(m, b, inf));
    under += __builtin_popcount(_mm512_mask_test_epi32_mask(m, a, a) &
                                _mm512_mask_cmple_epu32_mask(m, b, under_bits));
    __m512i code = codes16(round16(y, g), g);
    if (const __mmask16 bad = nonfinite16(y, m); bad != 0) code = codec_codes(y, code, bad, codec);
    _mm512_mask_cvtepi32_storeu_epi8(dst + i, m, code);
  }
  tally.amax = _mm512_reduce_max_epu32(top);
  tally.overflows += over;
  tally.underflows += under;
}

}  // namespace mantissa::quant::detail
