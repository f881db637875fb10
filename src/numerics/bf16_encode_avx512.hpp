#pragma once
// Internal, for the files compiled with -mavx512f -mavx512bw (after <immintrin.h>): the
// bfloat16 encode of convert_avx512.cpp by integer arithmetic, and its loop, which
// convert_avx512_bf16.cpp runs with AVX512-BF16's conversion instruction instead.
#include <immintrin.h>

#include <cstdint>

#include "convert_kernels.hpp"
#include "mantissa/numerics/bf16_avx512.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::numerics::detail {

using avx512::bf16_halves;

// 32 values at s as bfloat16 bits, in order, by integer arithmetic.
inline __m512i narrow_by_integers(const float* s, bool nearest) {
  // pack the two halves' low words in order (packus works per 128-bit lane, the permute puts
  // the lanes back)
  const __m512i a = bf16_halves(_mm512_loadu_si512(s), nearest);
  const __m512i b = bf16_halves(_mm512_loadu_si512(s + 16), nearest);
  return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7),
                                  _mm512_packus_epi32(a, b));
}

// The encode loop: narrow(s) gives 32 values' bits; the tails by bf16_halves under masks.
template <class Narrow>
inline void encode_bfloat16_with(const float* src, std::size_t n, std::uint16_t* dst,
                                 Rounding rounding, bool streaming, Narrow&& narrow) {
  const bool nearest = rounding == Rounding::nearest_even;
  const Layout l = layout(Format::bfloat16);
  const auto one = [&](std::size_t i) {  // up to the first 64-byte boundary, streaming
    dst[i] = static_cast<std::uint16_t>(encode(src[i], l, rounding, Overflow::to_infinity));
  };
  std::size_t i = 0;
  if (streaming) {
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 64 != 0; ++i) one(i);
    for (; i + 32 <= n; i += 32)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), narrow(src + i));
    _mm_sfence();
  }
  for (; i + 32 <= n; i += 32) _mm512_storeu_si512(dst + i, narrow(src + i));
  // The last 31 or fewer 16 lanes at a time under a mask (short rows, such as a product's
  // tile, end here).
  for (; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_cvtepi32_storeu_epi16(
        dst + i, m, bf16_halves(_mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + i)), nearest));
  }
}

}  // namespace mantissa::numerics::detail
