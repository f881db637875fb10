// Block-scaled operands at their format's width (block_operand.hpp): packing a quantizer's
// result, quantizing in bands on all threads, and decoding to bfloat16 or float32.
#include "mantissa/kernels/block_operand.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/fp4_packing.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::kernels {
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

float tile_scale(const PackedBlocks& q, std::int64_t tile_index) {
  const auto i = static_cast<std::size_t>(tile_index);
  return q.scale_format == Format::float32 ? q.scales32[i] : scale_table(q.scale_format)[q.scale_codes[i]];
}

// Row r's element values (codes decoded, no scale) into `out` [cols].
void decode_row(const PackedBlocks& q, std::int64_t r, float* out) {
  const std::int64_t start = r * q.cols;
  if (q.element != Format::float4_e2m1) {
    numerics::decode_array(q.elements.data() + start, static_cast<std::size_t>(q.cols), q.element,
                           out);
  } else if (start % 2 == 0) {
    numerics::decode_fp4_packed(q.elements.data() + start / 2, static_cast<std::size_t>(q.cols),
                                out);
  } else {  // an odd row start inside a byte: one element at a time
    const numerics::Layout& l = numerics::layout(q.element);
    for (std::int64_t c = 0; c < q.cols; ++c) {
      const std::uint8_t b = q.elements[static_cast<std::size_t>((start + c) / 2)];
      out[c] = numerics::decode((start + c) % 2 == 0 ? b & 0x0fu : b >> 4, l);
    }
  }
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

// Rows [r0, r1) of q decoded and scaled, written by `emit(row, values)`.
template <class Emit>
void scaled_rows(const PackedBlocks& q, std::int64_t r0, std::int64_t r1, Emit&& emit) {
  std::vector<float> values(static_cast<std::size_t>(q.cols)), mult(values.size());
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
    decode_row(q, r, values.data());
    for (std::int64_t c = 0; c < q.cols; ++c) values[c] *= mult[c];
    emit(r, values.data());
  }
}

}  // namespace

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

PackedBlocks quantize_packed(const float* x, std::int64_t rows, std::int64_t cols,
                             const BlockSpec& spec) {
  const auto quantize = [&](const float* xs, std::int64_t n_rows, std::uint64_t counter_offset) {
    return std::visit(
        [&](auto s) {
          s.counter += counter_offset;
          if constexpr (std::is_same_v<decltype(s), numerics::MxSettings>) {
            return numerics::quantize_mx(xs, n_rows, cols, s);
          } else if constexpr (std::is_same_v<decltype(s), numerics::Nvfp4Settings>) {
            return numerics::quantize_nvfp4(xs, n_rows, cols, s);
          } else {
            return numerics::quantize_fp8_blocks(xs, n_rows, cols, s);
          }
        },
        spec);
  };
  const numerics::TileShape tile = std::visit([](const auto& s) { return s.tile; }, spec);
  const std::int64_t band_rows = std::max<std::int64_t>(tile.rows, 1);
  const std::int64_t bands = rows > 0 ? (rows + band_rows - 1) / band_rows : 0;
  // One piece: NVFP4 (its tensor scale spans the matrix), a single band, or fp4 rows whose
  // bands would start inside a byte.
  const bool fp4 = std::visit(
      [](const auto& s) {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, numerics::Nvfp4Settings>) {
          return true;
        } else {
          return s.element == Format::float4_e2m1;
        }
      },
      spec);
  if (std::holds_alternative<numerics::Nvfp4Settings>(spec) || bands < 2 ||
      (fp4 && (band_rows * cols) % 2 != 0) || rows * cols < kParallelMinElements) {
    return PackedBlocks::from(quantize(x, rows, 0));
  }
  // Bands of tile rows in parallel, each a quantizer call with its counter advanced to its
  // first element (the same stochastic bits), then concatenated.
  BlockQuantized whole = quantize(x, 0, 0);  // the result's shape and formats, empty
  whole.rows = rows;
  whole.elements.resize(fp4 ? numerics::fp4_packed_bytes(static_cast<std::size_t>(rows * cols))
                            : static_cast<std::size_t>(rows * cols));
  const std::int64_t grid_cols = (cols + tile.cols - 1) / tile.cols;
  whole.scales.resize(static_cast<std::size_t>(bands * grid_cols));
  parallel_chunks(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        const std::int64_t r0 = b0 * band_rows, r1 = std::min(rows, b1 * band_rows);
        const BlockQuantized part =
            quantize(x + r0 * cols, r1 - r0, static_cast<std::uint64_t>(r0 * cols));
        const std::size_t first = static_cast<std::size_t>(fp4 ? r0 * cols / 2 : r0 * cols);
        std::memcpy(whole.elements.data() + first, part.elements.data(), part.elements.size());
        std::copy(part.scales.begin(), part.scales.end(),
                  whole.scales.begin() + static_cast<std::ptrdiff_t>(b0 * grid_cols));
      },
      1);
  return PackedBlocks::from(std::move(whole));
}

bool dequantize_to_bf16(const PackedBlocks& q, std::uint16_t* out) {
  std::uint32_t bad_any = 0;
  parallel_chunks(
      q.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::uint32_t bad = 0;
        scaled_rows(q, r0, r1, [&](std::int64_t r, const float* v) {
          std::uint16_t* o = out + r * q.cols;
          for (std::int64_t c = 0; c < q.cols; ++c) {
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
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1)));
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
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(q.cols, 1)));
}

}  // namespace mantissa::kernels
