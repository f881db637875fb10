// The block quantizers' bands (block_bands.hpp): which specs they take, the element grid and
// the tile multipliers, and the band loop on all threads around the bodies of this CPU's path
// (block_bands_avx512.cpp, or block_bands_avx2.cpp where AVX2 is the best path).
#include "block_bands.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "block_bands_avx2.hpp"
#include "block_bands_avx512.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/fp4_packing.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::quant::detail {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

numerics::TileShape tile_of(const BlockSpec& spec) {
  return std::visit([](const auto& s) { return s.tile; }, spec);
}

numerics::Rounding rounding_of(const BlockSpec& spec) {
  return std::visit([](const auto& s) { return s.rounding; }, spec);
}

enum class Output : std::uint8_t { values, codes };

// Whether the bands run on the AVX-512 units (else on AVX2: block_bands_avx2.hpp).
bool on_avx512() {
  return numerics::active_simd_path() == numerics::SimdPath::avx512;
}

bool takes(const BlockSpec& spec, Format x_format, std::int64_t cols, Output output) {
  if (numerics::active_simd_path() == numerics::SimdPath::scalar) return false;
  if (!valid_settings(spec)) return false;
  if (x_format != Format::float32 && x_format != Format::bfloat16) return false;
  if (rounding_of(spec) != numerics::Rounding::nearest_even) return false;
  const numerics::TileShape tile = tile_of(spec);
  if (tile.cols != 1 && tile.cols % 16 != 0) return false;  // valid_settings: at least 1 x 1
  if (const auto* nv = std::get_if<numerics::Nvfp4Settings>(&spec)) {
    // Codes only (values have no tensor scale); a rotation the numerics quantizer refuses
    // stays there.
    if (output != Output::codes) return false;
    if (nv->hadamard && (!(tile == numerics::TileShape{1, 16}) || cols % 16 != 0)) return false;
  }
  // fp4 codes two a byte: every row must start at a byte (cols even).
  if (output == Output::codes) return element_of(spec) != Format::float4_e2m1 || cols % 2 == 0;
  const auto* fp8 = std::get_if<numerics::Fp8BlockSettings>(&spec);
  return fp8 == nullptr || fp8->power_of_two;  // values: power-of-two scales
}

// The band bodies of this CPU's path.
void band_amax(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
               std::uint16_t* scratch) {
  if (on_avx512()) {
    band_amax_avx512(in, tile_cols, amax, scratch);
  } else {
    band_amax_avx2(in, tile_cols, amax, scratch);
  }
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

// A tile's encode and decode multipliers under spec: MX powers of two (a NaN amax gives
// encode 0 and a NaN decode); fp8 blocks the quantizer's scale and its reciprocal.
struct TileMultipliers {
  float encode, decode;
};

// An MX tile's multipliers from its E8M0 field f = k + 127: 2^-k and 2^k (2^-127 a float32
// subnormal), or 0 and NaN (a NaN tile). Selects, not branches: the loop over a group of
// tiles that calls it vectorizes.
inline TileMultipliers mx_multipliers(std::uint32_t f) {
  const std::uint32_t d = f == 0 ? 0x00400000u : f << 23;
  const std::uint32_t e = f == 254 ? 0x00400000u : (254 - f) << 23;
  return {std::bit_cast<float>(f == 0xff ? 0u : e),
          std::bit_cast<float>(f == 0xff ? 0x7fc00000u : d)};
}

// A tile's multipliers under spec from its amax (TileMultipliers).
TileMultipliers tile_multipliers(const BlockSpec& spec, float amax) {
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) {
    return mx_multipliers(numerics::mx_scale_field(amax, mx->element, mx->rule));
  }
  const auto& s = std::get<numerics::Fp8BlockSettings>(spec);
  const float encode = numerics::fp8_encode_scale(amax, s.element, s.power_of_two, s.epsilon);
  return {encode, 1.0f / encode};
}

// The per-tile arrays of a group of bands (index: band in the group * tiles a band + tile),
// derived from the tiles' amaxes in loops of selects that vectorize.
struct ScaleArrays {
  std::vector<std::uint32_t> amax;
  std::vector<std::uint8_t> fields;
  std::vector<float> enc, dec, lo, magic, top;
  std::vector<std::uint16_t> lo16, top16, offset16;

  explicit ScaleArrays(std::size_t n)
      : amax(n),
        fields(n),
        enc(n),
        dec(n),
        lo(n),
        magic(n),
        top(n),
        lo16(n),
        top16(n),
        offset16(n) {}

  // The first n tiles' multipliers under spec (NVFP4: under the tensor's global encode
  // scale; a decode without it, the e4m3 scale).
  void multipliers(const BlockSpec& spec, std::size_t n, float global_encode) {
    if (std::holds_alternative<numerics::Nvfp4Settings>(spec)) {
      numerics::nvfp4_tile_scales(amax.data(), n, global_encode, dec.data(), enc.data());
      return;
    }
    const auto* mx = std::get_if<numerics::MxSettings>(&spec);
    if (mx == nullptr) {
      for (std::size_t t = 0; t < n; ++t) {
        const TileMultipliers m = tile_multipliers(spec, std::bit_cast<float>(amax[t]));
        enc[t] = m.encode;
        dec[t] = m.decode;
      }
      return;
    }
    numerics::mx_scale_fields(amax.data(), n, mx->element, mx->rule, fields.data());
    for (std::size_t t = 0; t < n; ++t) {
      const TileMultipliers m = mx_multipliers(fields[t]);
      enc[t] = m.encode;
      dec[t] = m.decode;
    }
  }

  // The first n tiles' thresholds of grid in x's scale (BandScales), and as bfloat16 bits.
  // No tile is plain where the encode multiplier is not the decode's reciprocal (NVFP4).
  void thresholds(const BandGrid& g, bool bits16, std::size_t n) {
    constexpr std::uint32_t kLow = 0x0d800000u, kHigh = 0x71800000u;  // 2^-100, 2^100
    for (std::size_t t = 0; t < n; ++t) {
      const float d = dec[t];
      const std::uint32_t db = std::bit_cast<std::uint32_t>(d);
      // A power of two (fp8 blocks may scale by any float) in range (a NaN is above), whose
      // encode multiplier is its exact reciprocal (rounding x in its own scale is then
      // rounding x * encode; the product with a power of two is exact); fp8 blocks scale a
      // NaN or infinite amax by 1: not plain either.
      const bool plain = !g.nvfp4 && db >= kLow && db <= kHigh && (db & 0x7fffffu) == 0 &&
                         enc[t] * d == 1.0f && amax[t] < 0x7f800000u;
      lo[t] = plain ? g.min_normal * d : std::numeric_limits<float>::quiet_NaN();
      magic[t] = g.subnormal_magic * d;
      top[t] = g.max * d;
    }
    if (!bits16) return;
    for (std::size_t t = 0; t < n; ++t) {  // exact: powers of two; max has <= 4 significant bits
      const std::uint32_t lb = std::bit_cast<std::uint32_t>(lo[t]);
      lo16[t] = static_cast<std::uint16_t>(lb == 0x7fc00000u ? 0xffffu : lb >> 16);
      top16[t] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(top[t]) >> 16);
      const auto e = static_cast<std::int32_t>(std::bit_cast<std::uint32_t>(dec[t]) >> 23);
      offset16[t] = static_cast<std::uint16_t>((e - g.bias) << g.mantissa_bits);
    }
  }

  BandScales at(std::size_t first, std::int64_t tile_cols, bool with16) const {
    BandScales s{enc.data() + first, dec.data() + first,   tile_cols,
                 lo.data() + first,  magic.data() + first, top.data() + first};
    if (with16) {
      s.lo16 = lo16.data() + first;
      s.top16 = top16.data() + first;
      s.offset16 = offset16.data() + first;
    }
    return s;
  }
};

// For each band of tile rows, on all threads (runs of bands handed out as threads come
// free: parallel_pieces): the tiles' multipliers (one per column for one-column tiles), with
// the thresholds of `grid` in x's scale where it is given, then emit(band, rows,
// multipliers). Bands go in groups (up to 16 one-row bands of 1 x 32 tiles),
// so that the scales are found in long loops.
template <class Emit>
void over_bands(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                const BlockSpec& spec, const BandGrid* grid, float global_encode, Emit&& emit) {
  const numerics::TileShape tile = tile_of(spec);
  const std::int64_t band_rows = tile.rows;
  const std::int64_t bands = rows > 0 ? (rows + band_rows - 1) / band_rows : 0;
  const std::int64_t grid_cols = (cols + tile.cols - 1) / tile.cols;
  const std::int64_t group =
      std::clamp<std::int64_t>(1024 / std::max<std::int64_t>(grid_cols, 1), 1, 16);
  const bool bits16 = x_format == Format::bfloat16;
  // The 32-lane bfloat16 path: one-column tiles or tiles a multiple of 32 wide.
  const bool with16 = grid != nullptr && bits16 && (tile.cols == 1 || tile.cols % 32 == 0);
  parallel_pieces(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        ScaleArrays a(static_cast<std::size_t>(group * grid_cols));
        std::vector<std::uint16_t> scratch(bits16 ? static_cast<std::size_t>(cols) : 0);
        const auto rows_of = [&](std::int64_t band) {
          return BandRows{x, bits16, cols, band * band_rows,
                          std::min(rows, (band + 1) * band_rows)};
        };
        for (std::int64_t g0 = b0; g0 < b1; g0 += group) {
          const std::int64_t g1 = std::min(b1, g0 + group);
          const auto n = static_cast<std::size_t>((g1 - g0) * grid_cols);
          std::fill(a.amax.begin(), a.amax.begin() + static_cast<std::ptrdiff_t>(n), 0u);
          for (std::int64_t band = g0; band < g1; ++band) {
            band_amax(rows_of(band), tile.cols, a.amax.data() + (band - g0) * grid_cols,
                      bits16 ? scratch.data() : nullptr);
          }
          a.multipliers(spec, n, global_encode);
          if (grid != nullptr) a.thresholds(*grid, bits16, n);
          for (std::int64_t band = g0; band < g1; ++band) {
            emit(band, rows_of(band),
                 a.at(static_cast<std::size_t>((band - g0) * grid_cols), tile.cols, with16));
          }
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(band_rows * cols, 1)),
      1);
}

// The e4m3 code of d, an e4m3 value >= 0 (an NVFP4 tile's decode scale) or NaN: from its
// float32 bits (a normal's exponent and 3 fraction bits; a subnormal's multiple of 2^-9),
// the codec for a NaN.
std::uint8_t e4m3_code(float d, const numerics::Layout& e4m3) {
  if (d != d) {
    return static_cast<std::uint8_t>(
        numerics::encode(d, e4m3, numerics::Rounding::nearest_even, numerics::Overflow::saturate));
  }
  const std::uint32_t b = std::bit_cast<std::uint32_t>(d);
  if (d < 0x1p-6f) return static_cast<std::uint8_t>(d * 512.0f);  // exact: 0..7
  return static_cast<std::uint8_t>((((b >> 23) - 127 + 7) << 3) | ((b >> 20) & 7u));
}

// x's rows as float32, each group of 16 rotated by NVFP4's Hadamard transform (cols a
// multiple of 16), on all threads.
std::vector<float> rotated_rows(const void* x, Format x_format, std::int64_t rows,
                                std::int64_t cols) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  const std::size_t width = static_cast<std::size_t>(numerics::traits(x_format).storage_bytes);
  parallel_pieces(
      rows,
      [&](std::int64_t r0, std::int64_t r1) {
        float* o = out.data() + r0 * cols;
        numerics::decode_array(
            static_cast<const std::uint8_t*>(x) + static_cast<std::size_t>(r0 * cols) * width,
            static_cast<std::size_t>((r1 - r0) * cols), x_format, o);
        numerics::hadamard16_rows(o, r1 - r0, cols);
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(cols, 1)), 1);
  return out;
}

// The largest |x| of the matrix (a NaN above every number), on all threads.
float global_amax(const void* x, Format x_format, std::int64_t rows, std::int64_t cols) {
  std::uint32_t global = 0;
  const bool bits16 = x_format == Format::bfloat16;
  parallel_pieces(
      rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::vector<std::uint32_t> amax(static_cast<std::size_t>(cols), 0u);
        std::vector<std::uint16_t> scratch(bits16 ? static_cast<std::size_t>(cols) : 0);
        band_amax(BandRows{x, bits16, cols, r0, r1}, 1, amax.data(),
                  bits16 ? scratch.data() : nullptr);
        const std::uint32_t m = amax.empty() ? 0u : *std::max_element(amax.begin(), amax.end());
#pragma omp critical(mantissa_bands_global_amax)
        global = std::max(global, m);
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(cols, 1)), 1);
  return std::bit_cast<float>(global);
}

// MxRule mirrors numerics::MxScaleRule value for value.
static_assert(static_cast<int>(MxRule::floor) == static_cast<int>(numerics::MxScaleRule::floor) &&
              static_cast<int>(MxRule::rceil) == static_cast<int>(numerics::MxScaleRule::rceil) &&
              static_cast<int>(MxRule::ceil) == static_cast<int>(numerics::MxScaleRule::ceil) &&
              static_cast<int>(MxRule::even) == static_cast<int>(numerics::MxScaleRule::even) &&
              numerics::kMxScaleRuleNames.size() == 4);

// MX over bfloat16 or float32 in tiles of 1 x 32 (rows of whole tiles) or 32 x 1: the one-pass
// path's facts (mx_tiles_avx512.cpp, or mx_tiles_avx2.cpp); nullopt for every other spec
// (takes() has been asked).
std::optional<MxTiles> one_pass(const BlockSpec& spec, Format x_format, std::int64_t cols) {
  const auto* mx = std::get_if<numerics::MxSettings>(&spec);
  if (mx == nullptr || (x_format != Format::bfloat16 && x_format != Format::float32)) {
    return std::nullopt;
  }
  // AVX2 takes column tiles in strips of whole vectors: 16 bfloat16 or 8 float32 columns.
  const bool row_tiles = mx->tile == numerics::TileShape{1, 32} && cols % 32 == 0;
  const std::int64_t strip = on_avx512() ? 1 : x_format == Format::bfloat16 ? 16 : 8;
  if (!row_tiles && !(mx->tile == numerics::TileShape{32, 1} && cols % strip == 0)) {
    return std::nullopt;
  }
  MxTiles t;
  t.rule = static_cast<MxRule>(mx->rule);
  t.emax = numerics::mx_emax(mx->element);
  t.reciprocal_max = 1.0f / static_cast<float>(numerics::traits(mx->element).max);
  t.row_tiles = row_tiles;
  return t;
}

// pass(r0, r1) over the rows in pieces on all threads (whole 32-row bands for column tiles);
// answers the row ranges it did not finish (a tile whose amax is not finite), for the band
// path to redo.
template <class Pass>
std::vector<std::pair<std::int64_t, std::int64_t>> one_pass_pieces(std::int64_t rows,
                                                                   std::int64_t cols,
                                                                   const MxTiles& mx, Pass&& pass) {
  const std::int64_t band_rows = mx.row_tiles ? 1 : 32;
  const std::int64_t bands = (rows + band_rows - 1) / band_rows;
  std::vector<std::pair<std::int64_t, std::int64_t>> left;
  parallel_pieces(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        const std::int64_t r0 = b0 * band_rows, r1 = std::min(rows, b1 * band_rows);
        if (!pass(r0, r1)) {
#pragma omp critical(mantissa_bands_one_pass_left)
          left.emplace_back(r0, r1);
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(band_rows * cols, 1)),
      1);
  return left;
}

}  // namespace

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
  g.bias = l.bias;
  g.mantissa_bits = l.mantissa_bits;
  return g;
}

ElementCodec codec_of(Format element) {
  return {codec_value, codec_code, &numerics::layout(element)};
}

Format element_of(const BlockSpec& spec) {
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) return mx->element;
  if (std::holds_alternative<numerics::Nvfp4Settings>(spec)) return Format::float4_e2m1;
  return std::get<numerics::Fp8BlockSettings>(spec).element;
}

bool valid_settings(const BlockSpec& spec) {
  const numerics::TileShape tile = tile_of(spec);
  if (tile.rows < 1 || tile.cols < 1) return false;
  const Format e = element_of(spec);
  if (std::holds_alternative<numerics::MxSettings>(spec)) {
    return std::find(numerics::kBlockElementFormats.begin(), numerics::kBlockElementFormats.end(),
                     e) != numerics::kBlockElementFormats.end();
  }
  if (const auto* f = std::get_if<numerics::Fp8BlockSettings>(&spec)) {
    return (e == Format::float8_e4m3 || e == Format::float8_e5m2) && f->epsilon >= 0.0f &&
           !std::isinf(f->epsilon);
  }
  return true;
}

std::optional<bool> quantize_to_bf16_bands(const void* x, Format x_format, std::int64_t rows,
                                           std::int64_t cols, const BlockSpec& spec,
                                           std::uint16_t* out) {
  if (!takes(spec, x_format, cols, Output::values)) return std::nullopt;
  const Format element = element_of(spec);
  const BandGrid grid = grid_of(element);
  const ElementCodec codec = codec_of(element);
  std::uint32_t wrong_any = 0;
  // Rows [r0, r1) on the band path.
  const auto bands = [&](std::int64_t r0, std::int64_t r1) {
    over_bands(
        static_cast<const std::uint8_t*>(x) + r0 * cols * numerics::traits(x_format).storage_bytes,
        x_format, r1 - r0, cols, spec, &grid, 1.0f,
        [&](std::int64_t, const BandRows& in, const BandScales& s) {
          const bool exact = on_avx512() ? band_values_avx512(in, s, grid, codec, out + r0 * cols)
                                         : band_values_avx2(in, s, grid, codec, out + r0 * cols);
          if (!exact) {
#pragma omp atomic write
            wrong_any = 1u;
          }
        });
  };
  if (const std::optional<MxTiles> mx = one_pass(spec, x_format, cols)) {
    const auto left = one_pass_pieces(rows, cols, *mx, [&](std::int64_t r0, std::int64_t r1) {
      const BandRows in{x, x_format == Format::bfloat16, cols, r0, r1};
      const MxPassAnswer a = on_avx512() ? mx_values_avx512(in, *mx, grid, codec, out)
                                         : mx_values_avx2(in, *mx, grid, codec, out);
      if (a.finished && a.wrong) {
#pragma omp atomic write
        wrong_any = 1u;
      }
      return a.finished;
    });
    for (const auto& [r0, r1] : left) bands(r0, r1);
  } else {
    bands(0, rows);
  }
  return wrong_any == 0;
}

std::optional<PackedBlocks> quantize_packed_bands(const void* x, Format x_format, std::int64_t rows,
                                                  std::int64_t cols, const BlockSpec& spec) {
  // (quantize_packed has refused negative sizes and a product that overflows.)
  if (!takes(spec, x_format, cols, Output::codes)) return std::nullopt;
  PackedBlocks p;
  p.rows = rows;
  p.cols = cols;
  p.tile = tile_of(spec);
  p.element = element_of(spec);
  const bool mx = std::holds_alternative<numerics::MxSettings>(spec);
  const auto* nv = std::get_if<numerics::Nvfp4Settings>(&spec);
  p.scale_format = mx ? Format::float8_e8m0 : nv != nullptr ? Format::float8_e4m3 : Format::float32;
  const auto n = static_cast<std::size_t>(rows * cols);
  p.elements.resize(p.element == Format::float4_e2m1 ? numerics::fp4_packed_bytes(n) : n);
  const std::int64_t grid_cols = p.tile_grid_cols();
  const std::size_t tiles =
      static_cast<std::size_t>((rows + p.tile.rows - 1) / p.tile.rows * grid_cols);
  if (p.scale_format == Format::float32) {
    p.scales32.resize(tiles);
  } else {
    p.scale_codes.resize(tiles);
  }
  BandGrid grid = grid_of(p.element);
  grid.packed = p.element == Format::float4_e2m1;
  grid.nvfp4 = nv != nullptr;
  const ElementCodec codec = codec_of(p.element);
  // NVFP4: x rotated first where asked (into float32), and its global encode scale.
  std::vector<float> rotated;
  float global_encode = 1.0f;
  if (nv != nullptr) {
    if (nv->hadamard) {
      rotated = rotated_rows(x, x_format, rows, cols);
      x = rotated.data();
      x_format = Format::float32;
    }
    global_encode = numerics::nvfp4_global_encode_scale(global_amax(x, x_format, rows, cols));
    p.tensor_scale = 1.0f / global_encode;
  }
  if (const std::optional<MxTiles> mx = one_pass(spec, x_format, cols)) {
    const auto left = one_pass_pieces(rows, cols, *mx, [&](std::int64_t r0, std::int64_t r1) {
      const BandRows in{x, x_format == Format::bfloat16, cols, r0, r1};
      return on_avx512()
                 ? mx_codes_avx512(in, *mx, grid, codec, p.elements.data(), p.scale_codes.data())
                 : mx_codes_avx2(in, *mx, grid, codec, p.elements.data(), p.scale_codes.data());
    });
    if (left.empty()) return p;
    // Rows with a tile that is not finite: the band path over the whole matrix (rare).
  }
  const numerics::Layout& e4m3 = numerics::layout(Format::float8_e4m3);
  over_bands(x, x_format, rows, cols, spec, &grid, global_encode,
             [&](std::int64_t band, const BandRows& in, const BandScales& s) {
               if (on_avx512()) {
                 band_codes_avx512(in, s, grid, codec, p.elements.data());
               } else {
                 band_codes_avx2(in, s, grid, codec, p.elements.data());
               }
               const auto first = static_cast<std::size_t>(band * grid_cols);
               for (std::int64_t t = 0; t < grid_cols; ++t) {
                 const float d = s.decode[t];
                 const auto i = first + static_cast<std::size_t>(t);
                 if (mx) {  // the E8M0 code: the power of two's exponent field, 0xff for NaN
                   p.scale_codes[i] =
                       d != d ? 0xff
                              : static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(d) >> 23);
                 } else if (nv != nullptr) {
                   p.scale_codes[i] = e4m3_code(d, e4m3);
                 } else {
                   p.scales32[i] = d;
                 }
               }
             });
  return p;
}

}  // namespace mantissa::quant::detail
