// The block quantizers (block_scaling.hpp), band of tile rows by band: tile amaxes by an
// unsigned max over |x|'s bits (a NaN is above every number there), the scales once per
// tile, then each row scaled by its tiles' multipliers and encoded by the bulk codec (the
// vector paths of convert.hpp). quantize_*_ref (block_quantize_ref.cpp) give the same bits.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "block_scaling_detail.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/fp4_packing.hpp"

namespace mantissa::numerics {
namespace {

using detail::TileScale;

struct ElementRule {
  Rounding rounding;
  std::uint64_t seed, counter;
  bool plus_zero;  // NVFP4: a product of exactly zero encodes as +0
};

// The largest |x| bits of each tile of one row, folded into amax.
void fold_row_amax(const float* row, std::int64_t cols, std::int64_t tile_cols,
                   std::uint32_t* amax) {
  if (tile_cols == 1) {  // column-wise k x 1 tiles: one amax per column, a vector max
    for (std::int64_t c = 0; c < cols; ++c) amax[c] = std::max(amax[c], detail::abs_bits(row[c]));
    return;
  }
  for (std::int64_t c0 = 0, t = 0; c0 < cols; c0 += tile_cols, ++t) {
    const std::int64_t c1 = std::min(cols, c0 + tile_cols);
    std::uint32_t m = amax[t];
    for (std::int64_t c = c0; c < c1; ++c) m = std::max(m, detail::abs_bits(row[c]));
    amax[t] = m;
  }
}

// scales_of(amax bits, n, TileScale* out): the scales of a band's n tiles.
template <class ScalesOf>
void quantize_bands(const float* x, BlockQuantized& q, const ScalesOf& scales_of,
                    const ElementRule& rule) {
  const std::int64_t cols = q.cols, grid_cols = q.tile_grid_cols();
  if (q.rows == 0 || cols == 0) return;
  std::vector<std::uint32_t> amax(static_cast<std::size_t>(grid_cols));
  std::vector<TileScale> scales(amax.size());
  std::vector<float> multiplier(static_cast<std::size_t>(cols)), scaled(multiplier.size());
  std::vector<std::uint8_t> codes(multiplier.size());
  std::vector<std::uint8_t> nan_col(multiplier.size());
  ConvertOptions opt;
  opt.rounding = rule.rounding;
  opt.overflow = Overflow::saturate;
  opt.seed = rule.seed;
  const bool packed = q.element == Format::float4_e2m1;
  for (std::int64_t band = 0; band < q.tile_grid_rows(); ++band) {
    const std::int64_t r0 = band * q.tile.rows, r1 = std::min(q.rows, r0 + q.tile.rows);
    std::fill(amax.begin(), amax.end(), 0u);
    for (std::int64_t r = r0; r < r1; ++r)
      fold_row_amax(x + r * cols, cols, q.tile.cols, amax.data());
    bool any_nan = false;
    scales_of(amax.data(), grid_cols, scales.data());
    for (std::int64_t t = 0; t < grid_cols; ++t) {
      const TileScale& s = scales[static_cast<std::size_t>(t)];
      q.scales[static_cast<std::size_t>(band * grid_cols + t)] = s.decode;
      const std::int64_t c0 = t * q.tile.cols, c1 = std::min(cols, c0 + q.tile.cols);
      std::fill(multiplier.begin() + c0, multiplier.begin() + c1, s.encode);
      std::fill(nan_col.begin() + c0, nan_col.begin() + c1, s.nan ? 1 : 0);
      any_nan = any_nan || s.nan;
    }
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * cols;
      if (rule.plus_zero) {
        for (std::int64_t c = 0; c < cols; ++c) scaled[c] = row[c] * multiplier[c] + 0.0f;
      } else {
        for (std::int64_t c = 0; c < cols; ++c) scaled[c] = row[c] * multiplier[c];
      }
      opt.counter = rule.counter + static_cast<std::uint64_t>(r * cols);
      encode_array(scaled.data(), static_cast<std::size_t>(cols), q.element, codes.data(), opt);
      if (any_nan) {
        for (std::int64_t c = 0; c < cols; ++c) codes[c] = nan_col[c] ? 0 : codes[c];
      }
      const std::int64_t start = r * cols;
      if (!packed) {
        std::memcpy(q.elements.data() + start, codes.data(), static_cast<std::size_t>(cols));
      } else if (start % 2 == 0) {
        pack_fp4(codes.data(), static_cast<std::size_t>(cols), q.elements.data() + start / 2);
      } else {
        for (std::int64_t c = 0; c < cols; ++c) detail::put_code(q, start + c, codes[c]);
      }
    }
  }
}

// A per-tile scale rule as scales_of.
template <class ScaleOf>
auto each_tile(const ScaleOf& scale_of) {
  return [&scale_of](const std::uint32_t* amax, std::int64_t n, TileScale* out) {
    for (std::int64_t t = 0; t < n; ++t) out[t] = scale_of(std::bit_cast<float>(amax[t]));
  };
}

}  // namespace

BlockQuantized quantize_mx(const float* x, std::int64_t rows, std::int64_t cols,
                           const MxSettings& s) {
  detail::check_mx(s);
  BlockQuantized q = detail::make_result(rows, cols, s.tile, s.element, Format::float8_e8m0, "MX");
  const auto scale = [&](float amax) { return detail::mx_tile_scale(amax, s.element, s.rule); };
  quantize_bands(x, q, each_tile(scale), {s.rounding, s.seed, s.counter, false});
  return q;
}

namespace {

// NVFP4's bits of x under the global amax given, or (nullopt) x's own: x rotated once where
// s.hadamard, its amax then taken from the rotated values.
BlockQuantized quantize_nvfp4_with(const float* x, std::int64_t rows, std::int64_t cols,
                                   const Nvfp4Settings& s, std::optional<float> global_amax) {
  detail::check_nvfp4(s, cols);
  BlockQuantized q =
      detail::make_result(rows, cols, s.tile, Format::float4_e2m1, Format::float8_e4m3, "NVFP4");
  std::vector<float> rotated;
  if (s.hadamard) {
    rotated.assign(x, x + static_cast<std::size_t>(rows * cols));
    hadamard16_rows(rotated.data(), rows, cols);
    x = rotated.data();
  }
  if (!global_amax) global_amax = nvfp4_global_amax(x, rows, cols, false);
  const float global_encode = nvfp4_global_encode_scale(*global_amax);
  const float global_decode = 1.0f / global_encode;
  q.tensor_scale = global_decode;
  // The band's tile scales in one branch-free loop (nvfp4_tile_scales: the codec's bits).
  std::vector<float> decode, encode;
  const auto scales = [&](const std::uint32_t* amax, std::int64_t n, TileScale* out) {
    decode.resize(static_cast<std::size_t>(n));
    encode.resize(decode.size());
    nvfp4_tile_scales(amax, decode.size(), global_encode, decode.data(), encode.data());
    for (std::size_t t = 0; t < decode.size(); ++t) {
      out[t] = {decode[t], encode[t], decode[t] != decode[t]};
    }
  };
  quantize_bands(x, q, scales, {s.rounding, s.seed, s.counter, true});
  return q;
}

}  // namespace

float nvfp4_global_amax(const float* x, std::int64_t rows, std::int64_t cols, bool hadamard) {
  if (rows < 0 || cols < 0 ||
      (cols > 0 && rows > std::numeric_limits<std::int64_t>::max() / cols)) {
    throw Error("NVFP4 global amax: matrix of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " (expected sizes >= 0 whose product fits)");
  }
  if (hadamard && cols % 16 != 0) {
    throw Error("NVFP4 hadamard: " + std::to_string(cols) + " columns (expected a multiple of 16)");
  }
  const auto n = static_cast<std::size_t>(rows * cols);
  std::uint32_t global = 0;
  if (!hadamard) {
    for (std::size_t i = 0; i < n; ++i) global = std::max(global, detail::abs_bits(x[i]));
    return std::bit_cast<float>(global);
  }
  float v[16];  // each group of 16 rotated as quantize_nvfp4 rotates it
  for (std::size_t g = 0; g < n; g += 16) {
    std::copy(x + g, x + g + 16, v);
    hadamard16_rows(v, 1, 16);
    for (const float e : v) global = std::max(global, detail::abs_bits(e));
  }
  return std::bit_cast<float>(global);
}

BlockQuantized quantize_nvfp4_part(const float* x, std::int64_t rows, std::int64_t cols,
                                   const Nvfp4Settings& s, float global_amax) {
  return quantize_nvfp4_with(x, rows, cols, s, global_amax);
}

BlockQuantized quantize_nvfp4(const float* x, std::int64_t rows, std::int64_t cols,
                              const Nvfp4Settings& s) {
  return quantize_nvfp4_with(x, rows, cols, s, std::nullopt);
}

BlockQuantized quantize_fp8_blocks(const float* x, std::int64_t rows, std::int64_t cols,
                                   const Fp8BlockSettings& s) {
  detail::check_fp8_blocks(s);
  BlockQuantized q =
      detail::make_result(rows, cols, s.tile, s.element, Format::float32, "fp8 blocks");
  const auto scale = [&](float amax) { return detail::fp8_tile_scale(amax, s); };
  quantize_bands(x, q, each_tile(scale), {s.rounding, s.seed, s.counter, false});
  return q;
}

}  // namespace mantissa::numerics
