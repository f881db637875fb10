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

// As mx_decode_avx512: rows [r0, r1) of an MX operand's one-byte codes (row r at
// codes + r * cols) decoded with their tiles' E8M0 fields (1 x 32 tiles on rows of whole
// tiles where row_tiles, else 32 x 1) into out as bfloat16 bits, 16 lanes a step in 16-bit
// arithmetic (a normal code's bits from its own, a subnormal's from a table, the tile's
// exponent added) where the scales are 2^k with |k| <= 100 and no code is an infinity or
// NaN, else element by element with the multipliers. Returns false when some value is not a
// bfloat16 value.
bool mx_decode_avx2(const std::uint8_t* codes, const std::uint8_t* scale_codes, std::int64_t cols,
                    bool row_tiles, std::int64_t r0, std::int64_t r1, const CodeTable& t,
                    int mantissa_bits, std::uint16_t* out);

// As mx_values_avx512 and mx_codes_avx512 (mx_tiles_avx2.cpp): rows [r0, r1) of bfloat16 or
// float32 quantized by mx in one pass, 8 row tiles' (1 x 32) or a strip's (32 x 1; cols a
// multiple of 16 for bfloat16, of 8 for float32) amaxes, E8M0 fields, multipliers and
// thresholds in registers, then the same elements' values or codes while they are in the L1
// cache. An element that scales to an infinity or NaN goes through the codec in the pass
// itself; finished false: some tile's amax is an infinity or NaN, the rows the band path's to
// redo.
MxPassAnswer mx_values_avx2(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                            const ElementCodec& codec, std::uint16_t* out);
bool mx_codes_avx2(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                   const ElementCodec& codec, std::uint8_t* out, std::uint8_t* scale_codes);

}  // namespace mantissa::quant::detail
