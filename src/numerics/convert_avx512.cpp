// bfloat16 conversions 16 lanes at a time (SimdPath::avx512): compiled with -mavx512f
// -mavx512bw, entered only when cpu_supports(SimdPath::avx512). The same integer rounding on
// the float32 pattern as the AVX2 path (convert_avx2.cpp) and the scalar codec, so the same
// bits; the tails under lane masks (a streaming head and the in-place round's tail through the
// codec).
#include <immintrin.h>

#include <cstdint>

#include "bf16_encode_avx512.hpp"
#include "convert_kernels.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::numerics::detail {

void encode_bfloat16_avx512(const float* src, std::size_t n, std::uint16_t* dst, Rounding rounding,
                            bool streaming, bool unit) {
  if (unit && rounding == Rounding::nearest_even) {
    encode_bfloat16_by_unit_avx512(src, n, dst, streaming);
    return;
  }
  const bool nearest = rounding == Rounding::nearest_even;
  encode_bfloat16_with(src, n, dst, rounding, streaming,
                       [nearest](const float* s) { return narrow_by_integers(s, nearest); });
}

void decode_bfloat16_avx512(const std::uint16_t* src, std::size_t n, float* dst, bool streaming) {
  // 16 values from their bfloat16 halves h (in the low 16 bits of each lane), NaN quieted.
  const auto widen = [](__m256i h) { return avx512::bf16_widened(h); };

  const auto wide = [&](const std::uint16_t* s) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  };
  const Layout l = layout(Format::bfloat16);
  std::size_t i = 0;
  if (streaming) {
    // Up to the first 64-byte boundary of dst one element at a time, then whole lines.
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 64 != 0; ++i) {
      dst[i] = decode(src[i], l);
    }
    for (; i + 16 <= n; i += 16)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), wide(src + i));
    _mm_sfence();
  }
  for (; i + 16 <= n; i += 16) _mm512_storeu_si512(dst + i, wide(src + i));
  if (i < n) {  // the last 15 or fewer under a mask
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_epi32(dst + i, m,
                             widen(_mm512_castsi512_si256(
                                 _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), src + i))));
  }
}

void bytes_to_bfloat16_avx512(const std::uint8_t* src, std::size_t n, const std::uint16_t* table,
                              std::uint16_t* dst) {
  // The table in 8 registers of 32 words; a code's bits 5, 6 and 7 pick the register: bit 5
  // inside a two-source permute, bits 6 and 7 by blends.
  __m512i t[8];
  for (int i = 0; i < 8; ++i) t[i] = _mm512_loadu_si512(table + 32 * i);
  std::size_t i = 0;
  for (; i < n; i += 32) {
    const __mmask32 m = n - i >= 32 ? ~__mmask32{0} : (__mmask32{1} << (n - i)) - 1;
    const __m512i idx = _mm512_cvtepu8_epi16(
        _mm512_castsi512_si256(_mm512_maskz_loadu_epi8(static_cast<__mmask64>(m), src + i)));
    const __mmask32 bit6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
    const __mmask32 bit7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
    const __m512i low = _mm512_mask_blend_epi16(bit6, _mm512_permutex2var_epi16(t[0], idx, t[1]),
                                                _mm512_permutex2var_epi16(t[2], idx, t[3]));
    const __m512i high = _mm512_mask_blend_epi16(bit6, _mm512_permutex2var_epi16(t[4], idx, t[5]),
                                                 _mm512_permutex2var_epi16(t[6], idx, t[7]));
    _mm512_mask_storeu_epi16(dst + i, m, _mm512_mask_blend_epi16(bit7, low, high));
  }
}

void round_bfloat16_avx512(float* x, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = bf16_halves(_mm512_loadu_si512(x + i), true);
    _mm512_storeu_si512(x + i, _mm512_slli_epi32(h, 16));
  }
  const Layout l = layout(Format::bfloat16);
  for (; i < n; ++i) {
    x[i] = decode(encode(x[i], l, Rounding::nearest_even, Overflow::to_infinity), l);
  }
}

}  // namespace mantissa::numerics::detail
