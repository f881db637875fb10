#pragma once
// Bulk conversion between float32 arrays and packed arrays of any format. The vector paths
// are chosen at run time (cpu_features.hpp) and give exactly the bits of the scalar codec.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/rounding.hpp"

namespace mantissa::numerics {

// Where a bulk conversion's results go: through the caches (for results read soon), or
// around them with non-temporal stores (for large results written once and read later: no
// read of the destination's lines before they are written). A hint: paths without streaming
// stores write through the caches. The bits are the same either way.
enum class Stores : std::uint8_t { cached, streaming };

struct ConvertOptions {
  Rounding rounding = Rounding::nearest_even;
  // Unset: the format's default (to_infinity, or saturate for float8_e4m3).
  std::optional<Overflow> overflow;
  // Stochastic rounding of element i uses stochastic_bits(seed, counter + i).
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;
  // bfloat16 (nearest-even or toward zero) honours Stores::streaming.
  Stores stores = Stores::cached;
};

// float32 -> format. `dst` holds n elements of traits(format).storage_bytes bytes each
// (little-endian bit patterns). float32 -> float32 copies.
void encode_array(const float* src, std::size_t n, Format format, void* dst,
                  const ConvertOptions& options = {});
// format -> float32, exact. bfloat16 honours Stores::streaming (AVX2 and AVX-512 paths).
void decode_array(const void* src, std::size_t n, Format format, float* dst,
                  Stores stores = Stores::cached);

// Any format -> any format: decode, then encode to `to` (nearest-even, the format's default
// overflow); a copy when the formats match. Through a small stack buffer: no allocation.
void convert_array(const void* src, Format from, std::size_t n, void* dst, Format to);

// fp6 and fp4 codes take the low 6 or 4 bits of their byte. Throws mantissa::Error naming
// `who`, the first code with a higher bit set and its index; nothing to check in other
// formats, whose codes fill their storage. decode_array, decode_array_ref, convert_array and
// pack_fp4 call it: a code that does not fit is refused, not masked.
void require_codes_fit(const void* codes, std::size_t n, Format format, std::string_view who);

// The scalar twins: one codec call per element. They define the bits the fast paths give.
void encode_array_ref(const float* src, std::size_t n, Format format, void* dst,
                      const ConvertOptions& options = {});
void decode_array_ref(const void* src, std::size_t n, Format format, float* dst);

// Round trip in place: x[i] = decode(encode(x[i])), the value x[i] takes in `format`.
void round_to_format(float* x, std::size_t n, Format format, const ConvertOptions& options = {});

}  // namespace mantissa::numerics
