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
};

void encode_avx2(const float* src, std::size_t n, void* dst, const EncodeArgs& args);
void decode_avx2(const void* src, std::size_t n, const Layout& layout, int storage_bytes,
                 float* dst);

}  // namespace mantissa::numerics::detail
