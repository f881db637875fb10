#pragma once
// float4_e2m1 packed two per byte, the layout MX and NVFP4 tensors store (torchao's
// pack_uint4, Transformer Engine's fp4x2): element 2i in the low nibble of byte i, element
// 2i+1 in the high nibble. An odd count leaves the last byte's high nibble 0.
//
// encode_array/decode_array (convert.hpp) keep one float4_e2m1 code per byte (the pattern in
// the low 4 bits, as ml_dtypes stores float4_e2m1fn); these functions convert between that
// form and the packed one, and encode/decode float32 straight to and from the packed form.
#include <cstddef>
#include <cstdint>

#include "mantissa/numerics/convert.hpp"

namespace mantissa::numerics {

// Bytes that n packed float4_e2m1 elements take.
constexpr std::size_t fp4_packed_bytes(std::size_t n) {
  return n / 2 + n % 2;
}

// codes[i] (one per byte, 0..15) -> packed. Throws mantissa::Error naming the first code
// above 15 (not a float4_e2m1 pattern).
void pack_fp4(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed);
// packed -> codes[i], one per byte.
void unpack_fp4(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes);

// float32 -> packed float4_e2m1 (the codec's bits, any rounding; stochastic element i uses
// stochastic_bits(seed, counter + i) as encode_array does).
void encode_fp4_packed(const float* src, std::size_t n, std::uint8_t* dst,
                       const ConvertOptions& options = {});
// packed float4_e2m1 -> float32, exact.
void decode_fp4_packed(const std::uint8_t* src, std::size_t n, float* dst);

}  // namespace mantissa::numerics
