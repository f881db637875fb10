#pragma once
// Internal, for numerics' files compiled with -mavx2: 8 lanes of 32-bit integers, the packed
// loads and stores of 8 codes, and the vector form of the stochastic-rounding stream
// (rounding.hpp's stochastic_bits_keyed, lane for lane).
#include <immintrin.h>

#include <cstdint>

namespace mantissa::numerics::detail {

using V = __m256i;

inline V set1(std::uint32_t x) {
  return _mm256_set1_epi32(static_cast<int>(x));
}

// Stores the low 16 (or 8) bits of each of the 8 lanes, packed.
inline void store_packed(void* dst, V v, int bytes) {
  // Lanes hold values < 2^16, so unsigned saturation never changes them.
  const V p16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08);
  const __m128i lo = _mm256_castsi256_si128(p16);
  if (bytes == 2) {
    _mm_storeu_si128(static_cast<__m128i*>(dst), lo);
  } else {
    _mm_storel_epi64(static_cast<__m128i*>(dst), _mm_packus_epi16(lo, lo));
  }
}

inline V load_packed(const void* src, int bytes) {
  if (bytes == 2) return _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(src)));
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(src)));
}

inline V mix32_v(V x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, set1(0x7feb352du));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, set1(0x846ca68bu));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

// stochastic_bits_keyed(key, counter) in each lane.
inline V random8(V counter, V key) {
  return mix32_v(_mm256_add_epi32(mix32_v(_mm256_xor_si256(counter, key)), key));
}

// Unsigned a < b, lane-wise, as a mask.
inline V less_unsigned(V a, V b) {
  const V bias = set1(0x80000000u);
  return _mm256_cmpgt_epi32(_mm256_xor_si256(b, bias), _mm256_xor_si256(a, bias));
}

}  // namespace mantissa::numerics::detail
