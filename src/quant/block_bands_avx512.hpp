#pragma once
// Internal: the AVX-512 bodies of the block quantizers' fast bands (block_bands.cpp),
// compiled with -mavx512f -mavx512bw (block_bands_avx512.cpp), entered only when
// numerics::active_simd_path() is avx512. Only plain types cross this boundary.
#include <cstdint>
#include <type_traits>

namespace mantissa::quant::detail {

// An element format's grid in float32 terms.
struct BandGrid {
  int shift = 0;                    // 23 - mantissa bits: the float32 bits below the grid's
  float min_normal = 0;             // 2^emin
  float max = 0;                    // the largest finite value (saturation)
  float subnormal_magic = 0;        // 2^(emin - m + 23): (|y| + magic) - magic rounds
  float inv_spacing = 0;            // 2^(m - emin): a subnormal's code from its magnitude
  std::uint32_t normal_offset = 0;  // (127 - bias) << m: a normal's code is bits >> shift - this
  int sign_bit = 0;                 // the code's sign bit
  int bias = 0;                     // the element format's exponent bias
  int mantissa_bits = 0;
  bool packed = false;  // codes of 4 bits, two a byte (the even element's low; cols even)
  // NVFP4's elements: x times the tile's encode multiplier plus +0 (a product of exactly zero
  // encodes as +0); that multiplier is not the decode's reciprocal, so no tile is plain.
  bool nvfp4 = false;
};

// Rows [r0, r1) of a row-major matrix of `cols` columns, float32 or bfloat16.
struct BandRows {
  const void* x = nullptr;
  bool bf16 = false;
  std::int64_t cols = 0, r0 = 0, r1 = 0;
};

// The band's encode / decode multipliers: one per column when tile_cols is 1, else one per
// tile_cols columns (then a multiple of 16). A NaN decode marks a NaN tile (codes 0). For the
// values, the grid's smallest normal, subnormal magic and largest value times decode, where
// the tile is plain (a finite amax, decode a power of two within 2^-100..2^100 and encode
// its exact reciprocal: rounding x itself then gives the same bits, and a bfloat16 value),
// lo NaN where not.
struct BandScales {
  const float* encode = nullptr;
  const float* decode = nullptr;
  std::int64_t tile_cols = 1;
  const float* lo = nullptr;
  const float* magic = nullptr;
  const float* top = nullptr;
  // For bfloat16 input (else null): lo and top as bfloat16 bits (lo 0xffff where the tile
  // is not plain), and the code offset ((bias of float32 - bias of the element + k) << m for
  // decode 2^k): a normal element's code is its rounded bits >> (shift - 16) less this.
  const std::uint16_t* lo16 = nullptr;
  const std::uint16_t* top16 = nullptr;
  const std::uint16_t* offset16 = nullptr;
};

// The codec for one element that scaled to an infinity or NaN: y rounded to the format and
// decoded, or its code (nearest-even, saturating).
struct ElementCodec {
  float (*value)(const void* ctx, float y) = nullptr;
  std::uint32_t (*code)(const void* ctx, float y) = nullptr;
  const void* ctx = nullptr;
};

// Folds the largest |x| bits of each tile of the band's rows into amax (a NaN is above every
// number there): amax[c] per column when tile_cols is 1, else amax[t] per tile. `scratch`
// (cols 16-bit words, or null) lets bfloat16 input run 32 lanes a step.
void band_amax_avx512(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
                      std::uint16_t* scratch);

// Each element of the band times its tile's encode multiplier, rounded to the grid, times
// the decode multiplier, stored as the high half of its float32 bits into out (row r at
// out + r * cols). Returns false when some value is not a bfloat16 value (low bits or a
// float32 subnormal).
bool band_values_avx512(const BandRows& in, const BandScales& s, const BandGrid& g,
                        const ElementCodec& codec, std::uint16_t* out);

// The same rounded elements as their codes (row r at out + r * cols, or at out + r * cols / 2
// two a byte where g.packed); NaN tiles 0.
void band_codes_avx512(const BandRows& in, const BandScales& s, const BandGrid& g,
                       const ElementCodec& codec, std::uint8_t* out);

// A packed operand's element codes as values: every code's value (256 entries; the first
// 2^sign_bit, at most 128, are the magnitudes a code without its sign indexes; the rest give
// a NaN code its exact bits), and where the sign is.
struct CodeTable {
  const float* values = nullptr;
  int sign_bit = 7;
  bool packed = false;  // two codes a byte, the even element's low nibble (rows of even length)
};

// Rows [r0, r1) of `codes` (row r at codes + r * cols, or + r * cols / 2 packed) decoded and
// times their tile's multiplier (s.decode, s.tile_cols), stored as the high half of their
// float32 bits into out (row r at out + r * cols). Returns false when some value is not a
// bfloat16 value (low bits or a float32 subnormal).
bool band_decode_avx512(const std::uint8_t* codes, std::int64_t cols, std::int64_t r0,
                        std::int64_t r1, const BandScales& s, const CodeTable& t,
                        std::uint16_t* out);

// Rows [r0, r1) of an MX operand's one-byte codes (row r at codes + r * cols) decoded with
// their tiles' E8M0 fields (scale_codes, the tile grid row by row) into out as
// band_decode_avx512 does, for 1 x 32 tiles on rows of whole tiles (row_tiles) or 32 x 1
// tiles: 32 lanes a step in 16-bit arithmetic (each magnitude's bfloat16 bits from a table,
// the tile's exponent k added) where the tiles' scales are 2^k with |k| <= 100 and no code
// is an infinity or NaN, else 16 lanes with the multipliers. Returns false when some value is
// not a bfloat16 value.
bool mx_decode_avx512(const std::uint8_t* codes, const std::uint8_t* scale_codes, std::int64_t cols,
                      bool row_tiles, std::int64_t r0, std::int64_t r1, const CodeTable& t,
                      std::uint16_t* out);

// numerics::MxScaleRule as the one-pass MX paths take it, value for value (block_bands.cpp
// checks that at compile time).
enum class MxRule : std::uint8_t { floor, rceil, ceil, even };

// f(std::integral_constant<MxRule, rule>{}) for a rule known at run time (the one-pass paths
// compile a body per rule); `otherwise` for a value that is none of them.
template <class R, class F>
R with_rule(MxRule rule, R otherwise, F&& f) {
  switch (rule) {
    case MxRule::floor:
      return f(std::integral_constant<MxRule, MxRule::floor>{});
    case MxRule::ceil:
      return f(std::integral_constant<MxRule, MxRule::ceil>{});
    case MxRule::even:
      return f(std::integral_constant<MxRule, MxRule::even>{});
    case MxRule::rceil:
      return f(std::integral_constant<MxRule, MxRule::rceil>{});
  }
  return otherwise;
}

// An MX quantizer over bfloat16 or float32 rows in tiles of 1 x 32 (rows a multiple of 32
// long) or 32 x 1: its scale rule and its element format's facts (numerics::mx_emax, the
// float32 reciprocal of the largest value).
struct MxTiles {
  MxRule rule = MxRule::floor;
  int emax = 0;
  float reciprocal_max = 0;
  bool row_tiles = true;  // 1 x 32; else 32 x 1
};

// Rows [r0, r1) of in.x, bfloat16 or float32 (for 32 x 1 tiles r0 a multiple of 32), quantized
// by mx in one pass (mx_tiles_avx512.cpp): 16 row tiles' or a strip's amaxes, E8M0 fields,
// multipliers and thresholds in registers, then the same elements' values (as
// band_values_avx512) or codes (as band_codes_avx512; each tile's field into scale_codes at
// its index in the matrix's tile grid, where that is not null) while they are in the L1 cache.
// finished false: some tile's amax is an infinity or NaN, and the rows are the band path's to
// redo (whatever was written there will be). wrong: as band_values_avx512's false. The codes
// answer finished alone.
struct MxPassAnswer {
  bool finished = true;
  bool wrong = false;
};
MxPassAnswer mx_values_avx512(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                              const ElementCodec& codec, std::uint16_t* out);
bool mx_codes_avx512(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                     const ElementCodec& codec, std::uint8_t* out, std::uint8_t* scale_codes);

}  // namespace mantissa::quant::detail
