#pragma once
// What the block quantizers and their scalar twins share: argument checks, the per-tile
// scale arithmetic of each recipe, and the result's shape. The element loops differ.
#include <bit>
#include <cstdint>
#include <limits>

#include "mantissa/numerics/block_scaling.hpp"

namespace mantissa::numerics::detail {

// NaN-propagating float32 min, as torch.min / torch.clamp (std::fmin drops a NaN).
inline float min_nan(float a, float b) {
  return (a != a || b != b) ? std::numeric_limits<float>::quiet_NaN() : (a < b ? a : b);
}

// One tile's scale: `decode` is the stored scale value, `encode` the multiplier applied to
// the elements (before the tensor scale), `nan` when the tile's codes are all 0.
struct TileScale {
  float decode = 1.0f;
  float encode = 1.0f;
  bool nan = false;
};

TileScale mx_tile_scale(float amax, Format element, MxScaleRule rule);
// NVFP4 with the tensor's global encode / decode scales.
TileScale nvfp4_tile_scale(float amax, float global_encode, float global_decode);
TileScale fp8_tile_scale(float amax, const Fp8BlockSettings& s);

// Checks sizes, tile and formats (throws mantissa::Error naming the setting) and returns an
// empty result of the right shape: elements zeroed (packed for fp4), scales sized.
BlockQuantized make_result(std::int64_t rows, std::int64_t cols, TileShape tile, Format element,
                           Format scale_format, const char* recipe);
void check_mx(const MxSettings& s);
void check_nvfp4(const Nvfp4Settings& s, std::int64_t cols);
void check_fp8_blocks(const Fp8BlockSettings& s);

// Writes code c of element i (row-major index) into the result's element array.
inline void put_code(BlockQuantized& q, std::int64_t i, std::uint8_t c) {
  if (q.element == Format::float4_e2m1) {
    std::uint8_t& b = q.elements[static_cast<std::size_t>(i / 2)];
    b = (i % 2 == 0) ? static_cast<std::uint8_t>((b & 0xf0u) | c)
                     : static_cast<std::uint8_t>((b & 0x0fu) | (c << 4));
  } else {
    q.elements[static_cast<std::size_t>(i)] = c;
  }
}

// |x| as float32 bits: NaN patterns above 0x7f800000, so an unsigned max finds amax and NaN.
inline std::uint32_t abs_bits(float x) {
  return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
}

}  // namespace mantissa::numerics::detail
