// The one-pass MX quantizer over bfloat16 (quant/mx_tiles_avx512.cpp: 1 x 32 tiles sixteen
// at a time across row ends, 32 x 1 tiles in strips of 32 columns; quant/mx_tiles_avx2.cpp:
// eight at a time, strips of 16 columns), on each vector path the CPU has: its E8M0 fields for
// every bfloat16 amax under every scale rule and element format against numerics::mx_scale_field,
// and its codes, scales and values against the scalar reference quantizer on matrices whose
// tiles hit every case (zero tiles, NaN and infinite tiles, elements below the element
// format's normal range beside large ones, amaxes in float32's subnormal range, partial
// groups of tiles, partial bands and strips); and the 32-lane decode of such tiles' codes
// (quant/block_bands_avx512.cpp, mx_decode_avx512; the 16-lane mx_decode_avx2) against its
// scalar twin for every code at every kind of scale.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "bf16_decode_twin.hpp"
#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/quant/block_operand.hpp"
#include "simd_paths.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;
using numerics::TileShape;

constexpr numerics::MxScaleRule kRules[] = {
    numerics::MxScaleRule::floor, numerics::MxScaleRule::ceil, numerics::MxScaleRule::even,
    numerics::MxScaleRule::rceil};

// check() on the AVX2 path, then the AVX-512 one (a skip line where the CPU lacks one).
template <class Check>
void on_each_vector_path(Check&& check) {
  on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                    [&](const std::string& path) {
                      SCOPED_TRACE("the " + path + " path");
                      check();
                    });
}

float bf16_value(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

TEST(MxOnePass, EveryBf16AmaxGivesTheRulesField) {
  on_each_vector_path([&] {
    // Tile i's largest magnitude is the bfloat16 magnitude i (0 .. 0x7f7f: zero, subnormals,
    // normals; an infinite or NaN amax sends the rows to the band path, tested elsewhere), its
    // sign alternating, the tile's other elements smaller.
    constexpr std::int64_t kTiles = 0x7f80;
    std::vector<std::uint16_t> row_major(kTiles * 32), column_major(kTiles * 32);
    for (std::int64_t t = 0; t < kTiles; ++t) {
      for (std::int64_t k = 0; k < 32; ++k) {
        const auto smaller = static_cast<std::uint16_t>(t > 0 && k % 4 != 0 ? (t * 7 + k) % t : t);
        const auto v = static_cast<std::uint16_t>(smaller | (k % 2 == 1 ? 0x8000 : 0));
        row_major[static_cast<std::size_t>(t * 32 + k)] = v;
        column_major[static_cast<std::size_t>(k * kTiles + t)] = v;
      }
    }
    std::size_t checked = 0;
    for (const Format e : numerics::kBlockElementFormats) {
      for (const numerics::MxScaleRule rule : kRules) {
        for (const bool columns : {false, true}) {
          numerics::MxSettings s;
          s.element = e;
          s.rule = rule;
          s.tile = columns ? TileShape{32, 1} : TileShape{1, 32};
          // Rows of 32 tiles (1 x 32), or one band of 32 rows (32 x 1).
          const std::int64_t rows = columns ? 32 : kTiles / 32, cols = columns ? kTiles : 32 * 32;
          const std::vector<std::uint16_t>& bits = columns ? column_major : row_major;
          std::vector<float> values(bits.size());
          numerics::decode_array(bits.data(), bits.size(), Format::bfloat16, values.data());
          for (const bool bf16 : {true, false}) {  // the same values stored as float32 too
            const quant::PackedBlocks p =
                quant::quantize_packed(bf16 ? static_cast<const void*>(bits.data()) : values.data(),
                                       bf16 ? Format::bfloat16 : Format::float32, rows, cols, s);
            ASSERT_EQ(p.scale_codes.size(), static_cast<std::size_t>(kTiles));
            for (std::int64_t t = 0; t < kTiles; ++t) {
              const float amax = bf16_value(static_cast<std::uint16_t>(t));
              ASSERT_EQ(p.scale_codes[static_cast<std::size_t>(t)],
                        numerics::mx_scale_field(amax, e, rule))
                  << numerics::name(e) << " rule " << static_cast<int>(rule) << " amax bits " << t
                  << (columns ? " columns" : " rows") << (bf16 ? " bfloat16" : " float32");
              ++checked;
            }
          }
        }
      }
    }
    EXPECT_EQ(checked, 5u * 4u * 2u * 2u * kTiles);
  });
}

// A bfloat16 matrix whose 1 x 32 (or 32 x 1) tiles are of every kind: normal values at a
// binade drawn from 2^-reach .. 2^reach, some with elements 2^-30 of the rest (below the
// element format's normal range), all-zero tiles, negative zeros, and a NaN and an infinity.
std::vector<std::uint16_t> hostile_matrix(std::int64_t rows, std::int64_t cols, bool columns,
                                          int reach, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  const std::int64_t tiles = columns ? (rows + 31) / 32 * cols : rows * cols / 32;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int kind = static_cast<int>(rng() % 8);
    const int binade = static_cast<int>(rng() % static_cast<unsigned>(2 * reach + 1)) - reach;
    for (std::int64_t k = 0; k < 32; ++k) {
      // Tile t's element k: row-major runs of 32, or the transposed layout's column runs.
      const std::int64_t i = columns ? ((t / cols) * 32 + k) * cols + t % cols : t * 32 + k;
      if (i >= rows * cols) continue;
      float v = std::ldexp(d(rng), binade);
      if (kind == 1 && k % 5 == 0) v = std::ldexp(v, -30);
      if (kind == 2) v = 0.0f;
      if (kind == 3 && k % 2 == 0) v = -0.0f;
      x[static_cast<std::size_t>(i)] = v;
    }
  }
  x[static_cast<std::size_t>(cols + 3)] = std::numeric_limits<float>::quiet_NaN();
  x[static_cast<std::size_t>(rows * cols - 40)] = -std::numeric_limits<float>::infinity();
  std::vector<std::uint16_t> b(x.size());
  numerics::encode_array(x.data(), x.size(), Format::bfloat16, b.data());
  return b;
}

TEST(MxOnePass, CodesScalesAndValuesAreTheReferenceQuantizers) {
  on_each_vector_path([&] {
    // 37 x 544: 17 row tiles a row (groups of 16 cross the row ends; 629 tiles, a last group
    // of 5); column tiles in two bands, the second of 5 rows, strips of 32 up to 544. 70 x 40:
    // column strips of 32 and 8.
    struct Shape {
      std::int64_t rows, cols;
      bool columns;
    };
    std::size_t compared = 0, values_compared = 0;
    for (const Shape shape :
         {Shape{37, 544, false}, Shape{37, 544, true}, Shape{70, 40, true}, Shape{3, 32, false}}) {
      // reach 124: tile scales from float32's subnormals up (values there are not all
      // bfloat16 values); reach 90: every value is one, and they are compared too.
      for (const int reach : {124, 90}) {
        for (const bool finite : {true, false}) {
          std::vector<std::uint16_t> xb = hostile_matrix(shape.rows, shape.cols, shape.columns,
                                                         reach, static_cast<unsigned>(compared));
          if (finite) {  // no NaN or infinity: the one pass finishes every row
            for (std::uint16_t& v : xb) {
              if ((v & 0x7f80) == 0x7f80) v = 0x3f80;
            }
          }
          std::vector<float> xf(xb.size());
          numerics::decode_array(xb.data(), xb.size(), Format::bfloat16, xf.data());
          // The same values as float32, and float32 values with all 24 bits (each bfloat16
          // value times 1 + j 2^-20 for a j from 1 to 15: rounded by the element format, not
          // by bfloat16; the tile scales stay those of the bfloat16 amaxes but for a carry).
          std::vector<float> full(xf.size());
          for (std::size_t i = 0; i < xf.size(); ++i) {
            full[i] = xf[i] * (1.0f + std::ldexp(static_cast<float>(1 + i % 15), -20));
          }
          for (const int input : {0, 1, 2}) {  // bfloat16; float32 of those; float32 full
            const std::vector<float>& v = input == 2 ? full : xf;
            const void* x = input == 0 ? static_cast<const void*>(xb.data()) : v.data();
            const Format format = input == 0 ? Format::bfloat16 : Format::float32;
            for (const Format e : numerics::kBlockElementFormats) {
              for (const numerics::MxScaleRule rule : kRules) {
                numerics::MxSettings s;
                s.element = e;
                s.rule = rule;
                s.tile = shape.columns ? TileShape{32, 1} : TileShape{1, 32};
                SCOPED_TRACE(std::string(numerics::name(e)) + " rule " +
                             std::to_string(static_cast<int>(rule)) + " " +
                             std::to_string(shape.rows) + " x " + std::to_string(shape.cols) +
                             (shape.columns ? " columns" : " rows") + " reach " +
                             std::to_string(reach) + (finite ? "" : " with NaN") + " input " +
                             std::to_string(input));
                numerics::BlockQuantized want =
                    numerics::quantize_mx_ref(v.data(), shape.rows, shape.cols, s);
                const quant::PackedBlocks got =
                    quant::quantize_packed(x, format, shape.rows, shape.cols, s);
                ASSERT_EQ(got.elements, want.elements);
                ASSERT_EQ(got.scale_codes, want.scale_codes());
                // Values: the reference's codes decoded and scaled (the decode's scalar twin).
                std::vector<std::uint16_t> values(xb.size()), twin(xb.size());
                const bool exact =
                    quant::quantize_to_bf16(x, format, shape.rows, shape.cols, s, values.data());
                const bool want_exact = quant::dequantize_to_bf16_ref(
                    quant::PackedBlocks::from(std::move(want)), twin.data());
                ASSERT_EQ(exact, want_exact);
                if (reach == 90) {
                  ASSERT_TRUE(exact);
                }
                if (exact) {
                  ASSERT_EQ(values, twin);
                  ++values_compared;
                }
                ++compared;
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(compared, 4u * 2u * 2u * 3u * 5u * 4u);
    EXPECT_GE(values_compared, compared / 2);
  });
}

TEST(MxOnePass, EveryCodeAtEveryKindOfScaleDecodesAsTheTwin) {
  on_each_vector_path([&] {
    // Every code of each one-byte element format (NaN and infinity codes included) in 1 x 32
    // tiles and in 32 x 1 tiles, under E8M0 fields from 2^-127 (a float32 subnormal scale)
    // through the edges of the 32-lane path (2^-101, 2^-100, 2^100, 2^101) to 2^127 and NaN;
    // column tiles also with the fields varying from column to column (32 lanes of mixed
    // tiles), the decode's answer and every value as the scalar twin gives them.
    const std::uint8_t fields[] = {0, 26, 27, 124, 127, 130, 227, 228, 254, 0xff};
    constexpr std::int64_t kFields = 10;
    std::size_t compared = 0;
    for (const Format e : numerics::kBlockElementFormats) {
      if (e == Format::float4_e2m1) continue;  // two a byte: the 16-lane decode
      const std::int64_t codes = std::int64_t{1} << numerics::layout(e).total_bits();
      for (const int layout : {0, 1, 2}) {  // 1 x 32; 32 x 1; 32 x 1 with fields by column
        quant::PackedBlocks q;
        q.element = e;
        q.scale_format = Format::float8_e8m0;
        q.tile = layout == 0 ? TileShape{1, 32} : TileShape{32, 1};
        q.rows = layout == 0 ? kFields : 32 * kFields - 7;  // a last band of 25 rows
        q.cols = layout == 0 ? codes : codes + 8;           // column tiles: a last strip of 8
        for (std::int64_t r = 0; r < q.rows; ++r) {
          for (std::int64_t c = 0; c < q.cols; ++c) {
            q.elements.push_back(static_cast<std::uint8_t>((c + 3 * r) % codes));
          }
        }
        const std::int64_t grid_rows = (q.rows + q.tile.rows - 1) / q.tile.rows;
        for (std::int64_t b = 0; b < grid_rows; ++b) {
          for (std::int64_t t = 0; t < q.tile_grid_cols(); ++t) {
            q.scale_codes.push_back(fields[(layout == 2 ? b + t : b) % kFields]);
          }
        }
        SCOPED_TRACE(std::string(numerics::name(e)) + " layout " + std::to_string(layout));
        expect_decode_as_twin(q);
        ++compared;
      }
    }
    EXPECT_EQ(compared, 4u * 3u);
  });
}

}  // namespace
}  // namespace mantissa::testing
