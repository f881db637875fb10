#pragma once
// Internal, for the files compiled with -mavx512f -mavx512bw (after <immintrin.h>): 16
// bfloat16 values in and out of float32 lanes with the library's codec's bits (numerics'
// decode and nearest-even encode, NaN quieted both ways), so a kernel that reads and writes
// bfloat16 in registers gives the bits of decoding, computing in float32 and encoding.
#include <immintrin.h>

#include <cstdint>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>
#include "mantissa/numerics/bf16_avx512.hpp"

namespace mantissa::kernels::detail {

// The first `left` of 16 lanes (none for left <= 0).
inline __mmask16 lanes16(std::int64_t left) {
  return left >= 16  ? static_cast<__mmask16>(0xFFFF)
         : left <= 0 ? static_cast<__mmask16>(0)
                     : static_cast<__mmask16>((1u << left) - 1u);
}

// bfloat16 bits of v in the low halves of the lanes: nearest even, NaN quieted with its
// payload's top bits.
inline __m512i bf16_lanes(__m512 v) {
  return numerics::avx512::bf16_halves(_mm512_castps_si512(v), true);
}

// The lanes m selects of bf16_lanes' result, as 16-bit words at out.
inline void store_bf16_lanes(std::uint16_t* out, __mmask16 m, __m512i h) {
  _mm512_mask_storeu_epi16(out, static_cast<__mmask32>(m),
                           _mm512_castsi256_si512(_mm512_cvtepi32_epi16(h)));
}

// 16 bfloat16 values as float32 lanes, NaN quieted.
inline __m512 bf16_to_f32_lanes(__m256i h) {
  return _mm512_castsi512_ps(numerics::avx512::bf16_widened(h));
}

// The bfloat16 values at in (the lanes m selects; 0 elsewhere) as float32, NaN quieted.
inline __m512 load_bf16_lanes(const std::uint16_t* in, __mmask16 m) {
  return bf16_to_f32_lanes(
      _mm512_castsi512_si256(_mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), in)));
}

// 16 bfloat16 values at in as float32 lanes (all 16 read: no mask, which some cores, AMD's
// Zen 4 among them, execute more slowly). A NaN keeps its signalling bit: for a consumer
// whose arithmetic quiets it anyway (every float32 operation does, keeping the payload), the
// same results as bf16_to_f32_lanes in fewer instructions.
inline __m512 load_bf16_16_raw(const std::uint16_t* in) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in))), 16));
}

// bf16_lanes' 16 results at out, all 16 written (no mask).
inline void store_bf16_16(std::uint16_t* out, __m512i h) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(h));
}

// bf16_lanes(v) packed into 16 words, by AVX512-BF16's conversion instruction, a vector
// holding a subnormal by bf16_lanes (numerics::avx512::any_subnormal). Only where the CPU has
// AVX512-BF16.
__attribute__((target("avx512bf16"))) inline __m256i bf16_words_by_unit(__m512 v) {
  if (numerics::avx512::any_subnormal(_mm512_castps_si512(v))) {
    return _mm512_cvtepi32_epi16(bf16_lanes(v));
  }
  return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
}

}  // namespace mantissa::kernels::detail
