// The block quantizers' bands on the AVX-512 units (block_bands.hpp): which specs they take,
// the element grid and the tile multipliers, and the band loop on all threads around the
// AVX-512 bodies (block_bands_avx512.cpp).
#include "block_bands.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "block_bands_avx512.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::kernels::detail {
namespace {

numerics::TileShape tile_of(const BlockSpec& spec) {
  return std::visit([](const auto& s) { return s.tile; }, spec);
}

numerics::Rounding rounding_of(const BlockSpec& spec) {
  return std::visit([](const auto& s) { return s.rounding; }, spec);
}

enum class Output : std::uint8_t { values, codes };

bool takes(const BlockSpec& spec, Format x_format, Output output) {
  if (numerics::active_simd_path() != numerics::SimdPath::avx512) return false;
  if (x_format != Format::float32 && x_format != Format::bfloat16) return false;
  if (std::holds_alternative<numerics::Nvfp4Settings>(spec)) return false;
  if (rounding_of(spec) != numerics::Rounding::nearest_even) return false;
  const numerics::TileShape tile = tile_of(spec);
  if (tile.rows < 1 || tile.cols < 1 || (tile.cols != 1 && tile.cols % 16 != 0)) return false;
  if (output == Output::codes) return element_of(spec) != Format::float4_e2m1;
  const auto* fp8 = std::get_if<numerics::Fp8BlockSettings>(&spec);
  return fp8 == nullptr || fp8->power_of_two;  // values: power-of-two scales
}

BandGrid grid_of(Format element) {
  const numerics::Layout& l = numerics::layout(element);
  const numerics::FormatTraits& t = numerics::traits(element);
  BandGrid g;
  g.shift = 23 - l.mantissa_bits;
  g.min_normal = static_cast<float>(t.min_normal);
  g.max = static_cast<float>(t.max);
  g.subnormal_magic = std::ldexp(g.min_normal, 23 - l.mantissa_bits);
  g.inv_spacing = std::ldexp(1.0f, l.mantissa_bits) / g.min_normal;
  g.normal_offset = static_cast<std::uint32_t>(127 - l.bias) << l.mantissa_bits;
  g.sign_bit = l.exponent_bits + l.mantissa_bits;
  return g;
}

float codec_value(const void* ctx, float y) {
  const auto& l = *static_cast<const numerics::Layout*>(ctx);
  return numerics::decode(
      numerics::encode(y, l, numerics::Rounding::nearest_even, numerics::Overflow::saturate), l);
}

std::uint32_t codec_code(const void* ctx, float y) {
  return numerics::encode(y, *static_cast<const numerics::Layout*>(ctx),
                          numerics::Rounding::nearest_even, numerics::Overflow::saturate);
}

// 2^k for k in -127..127 (2^-127 a float32 subnormal).
float pow2(int k) {
  return k >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23)
                   : std::bit_cast<float>(0x00400000u);
}

// An MX tile's multipliers from its E8M0 field: 2^-k and 2^k, or 0 and NaN (a NaN tile).
TileMultipliers mx_multipliers(std::uint8_t field) {
  if (field == 0xff) return {0.0f, std::numeric_limits<float>::quiet_NaN()};
  const int k = static_cast<int>(field) - 127;
  return {pow2(-k), pow2(k)};
}

// For each band of tile rows, on all threads: the tiles' multipliers (one per column for
// one-column tiles), with the thresholds of `grid` in x's scale where it is given, then
// emit(band, rows, multipliers).
template <class Emit>
void over_bands(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                const BlockSpec& spec, const BandGrid* grid, Emit&& emit) {
  const numerics::TileShape tile = tile_of(spec);
  const std::int64_t band_rows = tile.rows;
  const std::int64_t bands = rows > 0 ? (rows + band_rows - 1) / band_rows : 0;
  const std::int64_t grid_cols = (cols + tile.cols - 1) / tile.cols;
  parallel_chunks(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        std::vector<std::uint32_t> amax(static_cast<std::size_t>(grid_cols));
        std::vector<float> enc(amax.size()), dec(amax.size());
        std::vector<float> lo(amax.size()), magic(amax.size()), top(amax.size());
        std::vector<std::uint8_t> fields(amax.size());
        for (std::int64_t band = b0; band < b1; ++band) {
          const BandRows in{x, x_format == Format::bfloat16, cols, band * band_rows,
                            std::min(rows, (band + 1) * band_rows)};
          std::fill(amax.begin(), amax.end(), 0u);
          band_amax_avx512(in, tile.cols, amax.data());
          if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) {
            numerics::mx_scale_fields(amax.data(), amax.size(), mx->element, mx->rule,
                                      fields.data());
            for (std::size_t t = 0; t < amax.size(); ++t) {
              const TileMultipliers m = mx_multipliers(fields[t]);
              enc[t] = m.encode;
              dec[t] = m.decode;
            }
          } else {
            for (std::size_t t = 0; t < amax.size(); ++t) {
              const TileMultipliers m = tile_multipliers(spec, std::bit_cast<float>(amax[t]));
              enc[t] = m.encode;
              dec[t] = m.decode;
            }
          }
          if (grid != nullptr) {
            for (std::size_t t = 0; t < amax.size(); ++t) {
              const float d = dec[t];
              // fp8 blocks scale a NaN or infinite amax by 1: not plain either
              const bool plain = d >= 0x1p-100f && d <= 0x1p100f && amax[t] < 0x7f800000u;
              lo[t] = plain ? grid->min_normal * d : std::numeric_limits<float>::quiet_NaN();
              magic[t] = grid->subnormal_magic * d;
              top[t] = grid->max * d;
            }
          }
          emit(band, in,
               BandScales{enc.data(), dec.data(), tile.cols, lo.data(), magic.data(), top.data()});
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(band_rows * cols, 1)),
      1);
}

}  // namespace

Format element_of(const BlockSpec& spec) {
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) return mx->element;
  if (std::holds_alternative<numerics::Nvfp4Settings>(spec)) return Format::float4_e2m1;
  return std::get<numerics::Fp8BlockSettings>(spec).element;
}

TileMultipliers tile_multipliers(const BlockSpec& spec, float amax) {
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) {
    return mx_multipliers(numerics::mx_scale_field(amax, mx->element, mx->rule));
  }
  const auto& s = std::get<numerics::Fp8BlockSettings>(spec);
  const float encode = numerics::fp8_encode_scale(amax, s.element, s.power_of_two, s.epsilon);
  return {encode, 1.0f / encode};
}

std::optional<bool> quantize_to_bf16_avx512(const void* x, Format x_format, std::int64_t rows,
                                            std::int64_t cols, const BlockSpec& spec,
                                            std::uint16_t* out) {
  if (!takes(spec, x_format, Output::values)) return std::nullopt;
  const Format element = element_of(spec);
  const BandGrid grid = grid_of(element);
  const ElementCodec codec{codec_value, codec_code, &numerics::layout(element)};
  std::uint32_t wrong_any = 0;
  over_bands(x, x_format, rows, cols, spec, &grid,
             [&](std::int64_t, const BandRows& in, const BandScales& s) {
               if (!band_values_avx512(in, s, grid, codec, out)) {
#pragma omp atomic write
                 wrong_any = 1u;
               }
             });
  return wrong_any == 0;
}

std::optional<PackedBlocks> quantize_packed_avx512(const void* x, Format x_format,
                                                   std::int64_t rows, std::int64_t cols,
                                                   const BlockSpec& spec) {
  if (!takes(spec, x_format, Output::codes) || rows < 0 || cols < 0) return std::nullopt;
  PackedBlocks p;
  p.rows = rows;
  p.cols = cols;
  p.tile = tile_of(spec);
  p.element = element_of(spec);
  const bool mx = std::holds_alternative<numerics::MxSettings>(spec);
  p.scale_format = mx ? Format::float8_e8m0 : Format::float32;
  p.elements.resize(static_cast<std::size_t>(rows * cols));
  const std::int64_t grid_cols = p.tile_grid_cols();
  const std::size_t tiles =
      static_cast<std::size_t>((rows + p.tile.rows - 1) / p.tile.rows * grid_cols);
  if (mx) {
    p.scale_codes.resize(tiles);
  } else {
    p.scales32.resize(tiles);
  }
  const BandGrid grid = grid_of(p.element);
  const ElementCodec codec{codec_value, codec_code, &numerics::layout(p.element)};
  over_bands(x, x_format, rows, cols, spec, nullptr,
             [&](std::int64_t band, const BandRows& in, const BandScales& s) {
               band_codes_avx512(in, s, grid, codec, p.elements.data());
               const auto first = static_cast<std::size_t>(band * grid_cols);
               for (std::int64_t t = 0; t < grid_cols; ++t) {
                 const float d = s.decode[t];
                 if (mx) {  // the E8M0 code: the power of two's exponent field, 0xff for NaN
                   p.scale_codes[first + static_cast<std::size_t>(t)] =
                       d != d ? 0xff
                              : static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(d) >> 23);
                 } else {
                   p.scales32[first + static_cast<std::size_t>(t)] = d;
                 }
               }
             });
  return p;
}

}  // namespace mantissa::kernels::detail
