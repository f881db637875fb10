#include "mantissa/numerics/fp4_packing.hpp"

#include <algorithm>

namespace mantissa::numerics {

void pack_fp4(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) {
  require_codes_fit(codes, n, Format::float4_e2m1, "pack_fp4");
  for (std::size_t j = 0; j < n / 2; ++j) {
    packed[j] = static_cast<std::uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
  }
  if (n % 2 != 0) packed[n / 2] = codes[n - 1];
}

void unpack_fp4(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) {
  for (std::size_t i = 0; i < n; ++i) {
    codes[i] = static_cast<std::uint8_t>((packed[i / 2] >> (4 * (i % 2))) & 0x0fu);
  }
}

void encode_fp4_packed(const float* src, std::size_t n, std::uint8_t* dst,
                       const ConvertOptions& options) {
  constexpr std::size_t kBlock = 4096;  // even: every block starts on a byte
  alignas(64) std::uint8_t codes[kBlock];
  ConvertOptions o = options;
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    encode_array(src + i, m, Format::float4_e2m1, codes, o);
    pack_fp4(codes, m, dst + i / 2);
    o.counter += m;
  }
}

void decode_fp4_packed(const std::uint8_t* src, std::size_t n, float* dst) {
  constexpr std::size_t kBlock = 4096;
  alignas(64) std::uint8_t codes[kBlock];
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    unpack_fp4(src + i / 2, m, codes);
    decode_array(codes, m, Format::float4_e2m1, dst + i);
  }
}

}  // namespace mantissa::numerics
