// Block-scaled operands at their format's width (block_operand.hpp): packing a quantizer's
// result, quantizing in bands on all threads, and decoding to bfloat16 or float32.
#include "mantissa/quant/block_operand.hpp"

#include <immintrin.h>
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>

#include "block_bands.hpp"
#include "block_bands_avx2.hpp"
#include "block_bands_avx512.hpp"
#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/fp4_packing.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::quant {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

using numerics::BlockQuantized;

// The 256 values of a one-byte scale format's codes.
const std::array<float, 256>& scale_table(Format f) {
  static const auto make = [](Format fmt) {
    std::array<float, 256> t{};
    for (std::uint32_t c = 0; c < 256; ++c) t[c] = numerics::decode(c, numerics::layout(fmt));
    return t;
  };
  static const std::array<float, 256> e8m0 = make(Format::float8_e8m0);
  static const std::array<float, 256> e4m3 = make(Format::float8_e4m3);
  return f == Format::float8_e8m0 ? e8m0 : e4m3;
}

// The 256 values of a one-byte element format's codes (fp6 and fp4 use the first 64 / 16).
const float* element_table(Format f) {
  static const auto make = [](Format fmt) {
    std::array<float, 256> t{};
    const numerics::Layout& l = numerics::layout(fmt);
    for (std::uint32_t c = 0; c < (1u << l.total_bits()); ++c) t[c] = numerics::decode(c, l);
    return t;
  };
  static const std::array<float, 256> e4m3 = make(Format::float8_e4m3),
                                      e5m2 = make(Format::float8_e5m2),
                                      e2m3 = make(Format::float6_e2m3),
                                      e3m2 = make(Format::float6_e3m2),
                                      e2m1 = make(Format::float4_e2m1);
  switch (f) {
    case Format::float8_e5m2:
      return e5m2.data();
    case Format::float6_e2m3:
      return e2m3.data();
    case Format::float6_e3m2:
      return e3m2.data();
    case Format::float4_e2m1:
      return e2m1.data();
    default:
      return e4m3.data();
  }
}

float tile_scale(const PackedBlocks& q, std::int64_t tile_index) {
  const auto i = static_cast<std::size_t>(tile_index);
  return q.scale_format == Format::float32 ? q.scales32[i]
                                           : scale_table(q.scale_format)[q.scale_codes[i]];
}

// Row r's element codes, one per byte (fp4 unpacked), into `codes` [cols]; returns them.
const std::uint8_t* row_codes(const PackedBlocks& q, std::int64_t r, std::uint8_t* codes) {
  const std::int64_t start = r * q.cols;
  if (q.element != Format::float4_e2m1) return q.elements.data() + start;
  const std::uint8_t* packed = q.elements.data() + start / 2;
  std::int64_t c = 0;
  if (start % 2 != 0) codes[c++] = packed[0] >> 4;  // a row that starts inside a byte
  const std::uint8_t* p = packed + (start % 2);
  for (; c + 1 < q.cols; c += 2, ++p) {
    codes[c] = *p & 0x0fu;
    codes[c + 1] = *p >> 4;
  }
  if (c < q.cols) codes[c] = *p & 0x0fu;
  return codes;
}

// The element code of element (r, c), unpacked.
std::uint32_t element_code(const PackedBlocks& q, std::int64_t r, std::int64_t c) {
  const std::int64_t i = r * q.cols + c;
  if (q.element != Format::float4_e2m1) return q.elements[static_cast<std::size_t>(i)];
  const std::uint8_t b = q.elements[static_cast<std::size_t>(i / 2)];
  return i % 2 == 0 ? b & 0x0fu : b >> 4;
}

// Whether float32 bits are zero, NaN, infinite or a normal number whose low 16 bits are zero
// (a bfloat16 value the bf16 units read as itself).
constexpr bool bf16_exact(std::uint32_t b) {
  const std::uint32_t e = b & 0x7f800000u;
  return (b & 0xffffu) == 0 && (e != 0 || (b & 0x7fffffffu) == 0);
}

// Rows [r0, r1) of q decoded and scaled (element value * tile scale, in float32), handed to
// `emit(row, values)`: per 8 elements a gather from the format's value table and a product
// with the tiles' scales.
template <class Emit>
void scaled_rows(const PackedBlocks& q, std::int64_t r0, std::int64_t r1, Emit&& emit) {
  std::vector<float> values(static_cast<std::size_t>(q.cols) + 8), mult(values.size());
  std::vector<std::uint8_t> unpacked(values.size());
  const float* table = element_table(q.element);
  const std::int64_t grid_cols = q.tile_grid_cols();
  std::int64_t band = -1;
  for (std::int64_t r = r0; r < r1; ++r) {
    if (r / q.tile.rows != band) {  // the row's tile multipliers, once per band of tile rows
      band = r / q.tile.rows;
      for (std::int64_t t = 0; t < grid_cols; ++t) {
        const std::int64_t c0 = t * q.tile.cols, c1 = std::min(q.cols, c0 + q.tile.cols);
        std::fill(mult.begin() + c0, mult.begin() + c1, tile_scale(q, band * grid_cols + t));
      }
    }
    const std::uint8_t* codes = row_codes(q, r, unpacked.data());
    std::int64_t c = 0;
    for (; c + 8 <= q.cols; c += 8) {
      std::uint64_t eight;
      std::memcpy(&eight, codes + c, 8);
      const __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(eight)));
      const __m256 v = _mm256_i32gather_ps(table, idx, 4);
      _mm256_storeu_ps(values.data() + c, _mm256_mul_ps(v, _mm256_loadu_ps(mult.data() + c)));
    }
    for (; c < q.cols; ++c)
      values[static_cast<std::size_t>(c)] = table[codes[c]] * mult[static_cast<std::size_t>(c)];
    emit(r, values.data());
  }
}

}  // namespace

void check_sizes(const char* what, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0 || !checked_mul(rows, cols)) {
    throw Error(std::string(what) + ": matrix of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " (expected sizes >= 0 whose product fits in 64 bits)");
  }
}

PackedBlocks PackedBlocks::from(BlockQuantized&& q) {
  PackedBlocks p;
  p.rows = q.rows;
  p.cols = q.cols;
  p.tile = q.tile;
  p.element = q.element;
  p.scale_format = q.scale_format;
  p.elements = std::move(q.elements);
  if (q.scale_format == Format::float32) {
    p.scales32 = std::move(q.scales);
  } else if (q.scale_format == Format::float8_e8m0) {
    // Powers of two 2^-127..2^127 or NaN: the exponent field is the code (2^-127, a float32
    // subnormal, is 0x00).
    p.scale_codes.resize(q.scales.size());
    for (std::size_t i = 0; i < q.scales.size(); ++i) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(q.scales[i]);
      p.scale_codes[i] = q.scales[i] != q.scales[i] ? 0xff : static_cast<std::uint8_t>(b >> 23);
    }
  } else {
    p.scale_codes = q.scale_codes();
  }
  p.tensor_scale = q.tensor_scale;
  return p;
}

float PackedBlocks::scale_at(std::int64_t r, std::int64_t c) const {
  return tile_scale(*this, (r / tile.rows) * tile_grid_cols() + c / tile.cols);
}

bool PackedBlocks::bf16_scales() const {
  if (scale_format != Format::float32) return true;
  for (float s : scales32) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(s) & 0x7fffffffu;
    if (!(s != s || b == 0 || (b >= 0x00800000u && (b & 0x7fffffu) == 0) ||
          (b < 0x00800000u && std::has_single_bit(b)))) {
      return false;
    }
  }
  return true;
}

std::int64_t PackedBlocks::bytes() const {
  return static_cast<std::int64_t>(elements.size() + scale_codes.size() +
                                   scales32.size() * sizeof(float));
}

PackedBlocks quantize_packed(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                             const BlockSpec& spec) {
  check_sizes("quantize_packed", rows, cols);
  if (std::optional<PackedBlocks> fast =
          detail::quantize_packed_bands(x, x_format, rows, cols, spec)) {
    return std::move(*fast);
  }
  // NVFP4 quantized in bands needs the matrix's global amax first (nullopt: the whole matrix
  // in one piece finds its own).
  std::optional<float> global_amax;
  const auto quantize = [&](const float* xs, std::int64_t n_rows, std::uint64_t counter_offset) {
    return std::visit(
        [&](auto s) {
          s.counter += counter_offset;
          if constexpr (std::is_same_v<decltype(s), numerics::MxSettings>) {
            return numerics::quantize_mx(xs, n_rows, cols, s);
          } else if constexpr (std::is_same_v<decltype(s), numerics::Nvfp4Settings>) {
            return global_amax ? numerics::quantize_nvfp4_part(xs, n_rows, cols, s, *global_amax)
                               : numerics::quantize_nvfp4(xs, n_rows, cols, s);
          } else {
            return numerics::quantize_fp8_blocks(xs, n_rows, cols, s);
          }
        },
        spec);
  };
  // Rows [r0, r0 + n) as float32: x itself, or decoded into `scratch`.
  const std::size_t width = static_cast<std::size_t>(numerics::traits(x_format).storage_bytes);
  const auto rows_f32 = [&](std::int64_t r0, std::int64_t n, std::vector<float>& scratch) {
    if (x_format == Format::float32) return static_cast<const float*>(x) + r0 * cols;
    scratch.resize(static_cast<std::size_t>(n * cols));
    numerics::decode_array(
        static_cast<const std::uint8_t*>(x) + static_cast<std::size_t>(r0 * cols) * width,
        scratch.size(), x_format, scratch.data());
    return static_cast<const float*>(scratch.data());
  };
  const numerics::TileShape tile = std::visit([](const auto& s) { return s.tile; }, spec);
  const std::int64_t band_rows = std::max<std::int64_t>(tile.rows, 1);
  const std::int64_t bands = rows > 0 ? (rows + band_rows - 1) / band_rows : 0;
  // One piece: a single band, or fp4 rows whose bands would start inside a byte.
  const bool fp4 = std::visit(
      [](const auto& s) {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, numerics::Nvfp4Settings>) {
          return true;
        } else {
          return s.element == Format::float4_e2m1;
        }
      },
      spec);
  if (bands < 2 || (fp4 && (band_rows * cols) % 2 != 0)) {
    std::vector<float> scratch;
    return PackedBlocks::from(quantize(rows_f32(0, rows, scratch), rows, 0));
  }
  const std::int64_t group =
      std::max<std::int64_t>(1, (1 << 16) / std::max<std::int64_t>(band_rows * cols, 1));
  const std::int64_t min_bands =
      std::max<std::int64_t>(2, kParallelMinElements / std::max<std::int64_t>(band_rows * cols, 1));
  if (const auto* nv = std::get_if<numerics::Nvfp4Settings>(&spec)) {
    // The tensor scale spans the matrix: its global amax first, group of bands by group on
    // all threads (a maximum: the same for any split), then the bands apart. The settings
    // are checked first, here: nothing may throw inside the parallel regions.
    (void)quantize(nullptr, 0, 0);
    std::uint32_t global = 0;
    parallel_pieces(
        bands,
        [&](std::int64_t b0, std::int64_t b1) {
          std::vector<float> scratch;
          std::uint32_t m = 0;
          for (std::int64_t g0 = b0; g0 < b1; g0 += group) {
            const std::int64_t r0 = g0 * band_rows,
                               r1 = std::min(rows, std::min(b1, g0 + group) * band_rows);
            m = std::max(m, std::bit_cast<std::uint32_t>(numerics::nvfp4_global_amax(
                                rows_f32(r0, r1 - r0, scratch), r1 - r0, cols, nv->hadamard)));
          }
#pragma omp critical(mantissa_nvfp4_global_amax)
          global = std::max(global, m);
        },
        min_bands, 1);
    global_amax = std::bit_cast<float>(global);
  }
  // Groups of bands of tile rows (about 64K elements; in parallel), each decoded to float32 in
  // a small buffer if x is not, quantized with its counter advanced to its first element
  // (the same stochastic bits), and copied into place.
  BlockQuantized whole = quantize(nullptr, 0, 0);  // the result's shape and formats, empty
  whole.rows = rows;
  whole.elements.resize(fp4 ? numerics::fp4_packed_bytes(static_cast<std::size_t>(rows * cols))
                            : static_cast<std::size_t>(rows * cols));
  const std::int64_t grid_cols = (cols + tile.cols - 1) / tile.cols;
  whole.scales.resize(static_cast<std::size_t>(bands * grid_cols));
  parallel_chunks(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        std::vector<float> scratch;
        for (std::int64_t g0 = b0; g0 < b1; g0 += group) {
          const std::int64_t g1 = std::min(b1, g0 + group);
          const std::int64_t r0 = g0 * band_rows, r1 = std::min(rows, g1 * band_rows);
          const BlockQuantized part = quantize(rows_f32(r0, r1 - r0, scratch), r1 - r0,
                                               static_cast<std::uint64_t>(r0 * cols));
          const std::size_t first = static_cast<std::size_t>(fp4 ? r0 * cols / 2 : r0 * cols);
          std::memcpy(whole.elements.data() + first, part.elements.data(), part.elements.size());
          std::copy(part.scales.begin(), part.scales.end(),
                    whole.scales.begin() + static_cast<std::ptrdiff_t>(g0 * grid_cols));
        }
      },
      min_bands, 1);
  return PackedBlocks::from(std::move(whole));
}

namespace {

// dequantize_to_bf16 on AVX2 (block_bands_avx2.cpp) for MX one-byte codes in 1 x 32 tiles on
// rows of whole tiles or 32 x 1 tiles; nullopt for every other operand.
std::optional<bool> mx_decode_avx2(const PackedBlocks& q, std::uint16_t* out) {
  const bool row_tiles = q.tile == numerics::TileShape{1, 32} && q.cols % 32 == 0;
  if (q.scale_format != Format::float8_e8m0 || q.element == Format::float4_e2m1 ||
      (!row_tiles && !(q.tile == numerics::TileShape{32, 1}))) {
    return std::nullopt;
  }
  const numerics::Layout& l = numerics::layout(q.element);
  detail::CodeTable table;
  table.sign_bit = l.exponent_bits + l.mantissa_bits;
  table.values = element_table(q.element);
  std::uint32_t bad_any = 0;
  parallel_pieces(
      q.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        if (!detail::mx_decode_avx2(q.elements.data(), q.scale_codes.data(), q.cols, row_tiles, r0,
                                    r1, table, l.mantissa_bits, out)) {
#pragma omp atomic write
          bad_any = 1u;
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1)), 1);
  return bad_any == 0;
}

// dequantize_to_bf16 on the AVX-512 units (block_bands_avx512.cpp): a table permute per 16
// codes, row by row with the tiles' multipliers; on AVX2, mx_decode_avx2 above; nullopt where
// neither takes q (the scalar path, a tile neither one column wide nor a multiple of 16 wide,
// fp4 rows of odd length; on AVX2 anything but MX one-byte codes in 1 x 32 or 32 x 1 tiles).
std::optional<bool> dequantize_to_bf16_bands(const PackedBlocks& q, std::uint16_t* out) {
  const bool packed = q.element == Format::float4_e2m1;
  const numerics::SimdPath path = numerics::active_simd_path();
  if (path == numerics::SimdPath::avx2) return mx_decode_avx2(q, out);
  if (path != numerics::SimdPath::avx512 || q.tile.rows < 1 ||
      (q.tile.cols != 1 && q.tile.cols % 16 != 0) || (packed && q.cols % 2 != 0)) {
    return std::nullopt;
  }
  const numerics::Layout& l = numerics::layout(q.element);
  detail::CodeTable table;
  table.sign_bit = l.exponent_bits + l.mantissa_bits;
  table.values = element_table(q.element);
  table.packed = packed;
  const std::int64_t grid_cols = q.tile_grid_cols();
  std::uint32_t bad_any = 0;
  const std::int64_t min_rows =
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1));
  // MX in 1 x 32 tiles on rows of whole tiles, or 32 x 1, one-byte codes: 32 lanes a step.
  const bool row_tiles = q.tile == numerics::TileShape{1, 32} && q.cols % 32 == 0;
  if (q.scale_format == Format::float8_e8m0 && !packed &&
      (row_tiles || q.tile == numerics::TileShape{32, 1})) {
    parallel_pieces(
        q.rows,
        [&](std::int64_t r0, std::int64_t r1) {
          if (!detail::mx_decode_avx512(q.elements.data(), q.scale_codes.data(), q.cols, row_tiles,
                                        r0, r1, table, out)) {
#pragma omp atomic write
            bad_any = 1u;
          }
        },
        min_rows, 1);
    return bad_any == 0;
  }
  parallel_pieces(
      q.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::vector<float> mult(static_cast<std::size_t>(grid_cols));
        std::int64_t band = -1;
        std::uint32_t bad = 0;
        for (std::int64_t r = r0; r < r1; ++r) {
          if (r / q.tile.rows != band) {  // the tiles' multipliers, once per band of tile rows
            band = r / q.tile.rows;
            for (std::int64_t t = 0; t < grid_cols; ++t) {
              mult[static_cast<std::size_t>(t)] = tile_scale(q, band * grid_cols + t);
            }
          }
          // The decode reads only `decode` (encode is never dereferenced as something else).
          const detail::BandScales s{mult.data(), mult.data(), q.tile.cols};
          bad |= detail::band_decode_avx512(q.elements.data(), q.cols, r, r + 1, s, table, out)
                     ? 0u
                     : 1u;
        }
        if (bad != 0) {
#pragma omp atomic write
          bad_any = 1u;
        }
      },
      min_rows, 1);
  return bad_any == 0;
}

}  // namespace

bool dequantize_to_bf16(const PackedBlocks& q, std::uint16_t* out) {
  if (const std::optional<bool> fast = dequantize_to_bf16_bands(q, out)) return *fast;
  std::uint32_t bad_any = 0;
  parallel_chunks(
      q.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::uint32_t bad = 0;
        scaled_rows(q, r0, r1, [&](std::int64_t r, const float* v) {
          std::uint16_t* o = out + r * q.cols;
          std::int64_t c = 0;
          __m256i low = _mm256_setzero_si256(), tiny = _mm256_setzero_si256();
          const __m256i low_mask = _mm256_set1_epi32(0xffff),
                        exp_mask = _mm256_set1_epi32(0x7f800000);
          const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), zero = _mm256_setzero_si256();
          for (; c + 8 <= q.cols; c += 8) {
            const __m256i b = _mm256_castps_si256(_mm256_loadu_ps(v + c));
            low = _mm256_or_si256(low, _mm256_and_si256(b, low_mask));
            // nonzero with a zero exponent field: a float32 subnormal
            const __m256i sub =
                _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(b, abs_mask), zero),
                                    _mm256_cmpeq_epi32(_mm256_and_si256(b, exp_mask), zero));
            tiny = _mm256_or_si256(tiny, sub);
            const __m256i hi = _mm256_srli_epi32(b, 16);
            _mm_storeu_si128(
                reinterpret_cast<__m128i*>(o + c),
                _mm_packus_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1)));
          }
          bad |=
              _mm256_testz_si256(_mm256_or_si256(low, tiny), _mm256_or_si256(low, tiny)) ? 0u : 1u;
          for (; c < q.cols; ++c) {
            const std::uint32_t b = std::bit_cast<std::uint32_t>(v[c]);
            bad |= bf16_exact(b) ? 0u : 1u;
            o[c] = static_cast<std::uint16_t>(b >> 16);
          }
        });
        if (bad != 0) {
#pragma omp atomic write
          bad_any = 1u;
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1)), 1);
  return bad_any == 0;
}

bool dequantize_to_bf16_ref(const PackedBlocks& q, std::uint16_t* out) {
  const numerics::Layout& l = numerics::layout(q.element);
  bool exact = true;
  for (std::int64_t r = 0; r < q.rows; ++r) {
    for (std::int64_t c = 0; c < q.cols; ++c) {
      const float v = numerics::decode(element_code(q, r, c), l) * q.scale_at(r, c);
      const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
      exact = exact && bf16_exact(b);
      out[r * q.cols + c] = static_cast<std::uint16_t>(b >> 16);
    }
  }
  return exact;
}

void dequantize_to_float32(const PackedBlocks& q, float* out) {
  parallel_chunks(
      q.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        scaled_rows(q, r0, r1, [&](std::int64_t r, const float* v) {
          std::memcpy(out + r * q.cols, v, static_cast<std::size_t>(q.cols) * sizeof(float));
        });
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1)), 1);
}

}  // namespace mantissa::quant
