#pragma once
// Internal: the per-ISA conversion kernels behind convert.hpp. Each processes the whole
// array, finishing any tail with the scalar codec.
#include <cstddef>
#include <cstdint>

#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/rounding.hpp"

namespace mantissa::numerics::detail {

struct EncodeArgs {
  Layout layout;
  Rounding rounding;
  Overflow overflow;
  std::uint64_t seed;
  // Stochastic: element i uses stochastic_bits_keyed(stochastic_key(seed, counter_high),
  // counter_low + i); the caller guarantees counter_low + n does not wrap.
  std::uint32_t counter_high;
  std::uint32_t counter_low;
  int storage_bytes;
  // Non-temporal stores from dst's first 32-byte boundary on (bfloat16, nearest-even or
  // toward zero, only; the rest ignore it).
  bool streaming = false;
};

void encode_avx2(const float* src, std::size_t n, void* dst, const EncodeArgs& args);
// Rounds float32 values in place to the nearest-even value of `layout` (with `overflow` for
// out-of-range values). Groups of 8 whose lanes are all zero or of magnitude in
// [min_normal, max_finite] round in float32 bits (add half an ulp of the target, mask the
// dropped bits); any other group goes through the scalar codec.
void round_nearest_avx2(float* x, std::size_t n, const Layout& layout, Overflow overflow,
                        float min_normal, float max_finite);
// float16, nearest-even, overflow to infinity: F16C there and back (subnormals included).
void round_float16_avx2(float* x, std::size_t n);
// streaming (bfloat16 only; other formats ignore it): non-temporal stores from dst's first
// 32-byte boundary on.
void decode_avx2(const void* src, std::size_t n, const Layout& layout, int storage_bytes,
                 float* dst, bool streaming = false);

// E8M0 (convert_e8m0_avx2.cpp), every rounding and overflow mode, lane for lane the codec;
// used on the avx2 and avx512 paths. `streaming` does not apply.
void encode_e8m0_avx2(const float* src, std::size_t n, std::uint8_t* dst, const EncodeArgs& args);
void decode_e8m0_avx2(const std::uint8_t* src, std::size_t n, float* dst);

// SimdPath::avx512 (convert_avx512.cpp): bfloat16 16 lanes at a time, bit for bit as the avx2
// kernels and the codec. Encode: nearest even or toward zero, overflow to infinity.
// streaming: non-temporal stores from dst's first 64-byte boundary on. unit: nearest even
// rounds by AVX512-BF16's conversion instruction (only where the CPU has it; the same bits).
void encode_bfloat16_avx512(const float* src, std::size_t n, std::uint16_t* dst, Rounding rounding,
                            bool streaming, bool unit);
// Nearest even by AVX512-BF16's conversion instruction (convert_avx512_bf16.cpp), the same
// bits as the integer rounding: only where the CPU has AVX512-BF16.
void encode_bfloat16_by_unit_avx512(const float* src, std::size_t n, std::uint16_t* dst,
                                    bool streaming);
// streaming: non-temporal stores from dst's first 64-byte boundary on.
void decode_bfloat16_avx512(const std::uint16_t* src, std::size_t n, float* dst, bool streaming);
// Nearest even, overflow to infinity, in place.
void round_bfloat16_avx512(float* x, std::size_t n);
// n one-byte codes through a 256-entry table of bfloat16 bits: dst[i] = table[src[i]].
void bytes_to_bfloat16_avx512(const std::uint8_t* src, std::size_t n, const std::uint16_t* table,
                              std::uint16_t* dst);

}  // namespace mantissa::numerics::detail
