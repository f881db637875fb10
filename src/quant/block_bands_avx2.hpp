#pragma once
// Internal: the bodies of the block quantizers' bands (block_bands.cpp) on CPUs whose best
// path is AVX2 (block_bands_avx2.cpp), 8 float32 lanes a step: what block_bands_avx512.hpp
// declares for the AVX-512 units, with the same contracts and the same bits.
#include <cstdint>

#include "block_bands_avx512.hpp"

namespace mantissa::quant::detail {

// As band_amax_avx512: each tile's largest |x| bits folded into amax (per column when
// tile_cols is 1, else per tile; a NaN above every number). `scratch` (cols 16-bit words, or
// null) lets bfloat16 input in one-column tiles run 16 lanes a step.
void band_amax_avx2(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
                    std::uint16_t* scratch);

// As band_values_avx512: the band's elements rounded to the grid as bfloat16 values (row r at
// out + r * cols); false when some value is not a bfloat16 value.
bool band_values_avx2(const BandRows& in, const BandScales& s, const BandGrid& g,
                      const ElementCodec& codec, std::uint16_t* out);

// As band_codes_avx512: the same rounded elements as their codes (row r at out + r * cols, or
// at out + r * cols / 2 two a byte where g.packed); NaN tiles 0.
void band_codes_avx2(const BandRows& in, const BandScales& s, const BandGrid& g,
                     const ElementCodec& codec, std::uint8_t* out);

}  // namespace mantissa::quant::detail
