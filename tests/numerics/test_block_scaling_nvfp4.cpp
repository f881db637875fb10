// NVFP4 and fp8 block / current scaling against the recipes' float32 formulas written again
// here (Transformer Engine's reference_nvfp4.py and compute_scale_from_amax), with every
// e4m3 / e2m1 conversion through the exact codec reference; their scalar twins bit for bit;
// the 16-point Hadamard rotation against H16 as a matrix.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "exact_reference.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/block_scaling.hpp"

namespace mantissa::testing {
namespace {

using numerics::BlockQuantized;
using numerics::Format;
using numerics::Rounding;

constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
const RefFormat kE4M3{4, 3, 7, false};
const RefFormat kE5M2{5, 2, 15, true};
const RefFormat kE2M1{2, 1, 1, false, false};

float nan_min(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

std::uint32_t code_at(const BlockQuantized& q, std::int64_t i) {
  if (q.element != Format::float4_e2m1) return q.elements[static_cast<std::size_t>(i)];
  return (q.elements[static_cast<std::size_t>(i / 2)] >> (4 * (i % 2))) & 0xfu;
}

void expect_same(const BlockQuantized& a, const BlockQuantized& b) {
  ASSERT_EQ(a.elements, b.elements);
  ASSERT_EQ(a.scales.size(), b.scales.size());
  for (std::size_t i = 0; i < a.scales.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a.scales[i]), std::bit_cast<std::uint32_t>(b.scales[i]));
  }
  ASSERT_EQ(std::bit_cast<std::uint32_t>(a.tensor_scale),
            std::bit_cast<std::uint32_t>(b.tensor_scale));
}

std::vector<float> matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 24) - 12);
    for (std::int64_t c = 0; c < cols; ++c) x[r * cols + c] = d(rng) * scale;
  }
  std::fill(x.begin(), x.begin() + 16, 0.0f);  // an all-zero tile
  x[20] = -0.0f;
  return x;
}

// H16 (Sylvester) entry: (-1)^popcount(i & j).
double h16(int i, int j) {
  return std::popcount(static_cast<unsigned>(i & j)) % 2 == 0 ? 1.0 : -1.0;
}

struct Nvfp4Case {
  numerics::TileShape tile;
  bool hadamard;
  Rounding rounding;
};

class Nvfp4 : public ::testing::TestWithParam<Nvfp4Case> {};

TEST_P(Nvfp4, MatchesTheReferenceFormulasAndTheScalarTwin) {
  const Nvfp4Case& p = GetParam();
  const std::int64_t rows = 37, cols = 80;  // 16 x 16 tiles: a short last band of 5 rows
  std::vector<float> x = matrix(rows, cols, 4);
  numerics::Nvfp4Settings s;
  s.tile = p.tile;
  s.hadamard = p.hadamard;
  s.rounding = p.rounding;
  s.seed = 9;
  s.counter = 5;
  const BlockQuantized q = numerics::quantize_nvfp4(x.data(), rows, cols, s);
  expect_same(q, numerics::quantize_nvfp4_ref(x.data(), rows, cols, s));
  if (p.hadamard) {  // the rotated input, by the matrix definition in double
    std::vector<float> y(x.size());
    for (std::int64_t g = 0; g < rows * cols / 16; ++g) {
      for (int j = 0; j < 16; ++j) {
        double sum = 0;
        for (int i = 0; i < 16; ++i) {
          sum += numerics::kNvfp4HadamardSigns[i] * h16(i, j) * static_cast<double>(x[g * 16 + i]);
        }
        y[g * 16 + j] = static_cast<float>(sum / 4.0);
      }
    }
    // The butterfly rounds in float32: the quantized codes can differ from the double
    // rotation's only where a value sits on a rounding boundary; use the library's rotation
    // for the element check and compare it with the matrix to a few float32 ulps.
    std::vector<float> rotated = x;
    numerics::hadamard16_rows(rotated.data(), rows, cols);
    for (std::size_t i = 0; i < y.size(); ++i) {
      float group_max = 0.0f;
      for (std::size_t k = i / 16 * 16; k < i / 16 * 16 + 16; ++k) {
        group_max = std::max(group_max, std::fabs(x[k]));
      }
      ASSERT_NEAR(rotated[i], y[i], 4e-6 * group_max) << i;  // 16 terms of float32 rounding
    }
    x = rotated;
  }
  float global_amax = 0.0f;
  for (float v : x) global_amax = std::max(global_amax, std::fabs(v));
  float genc = nan_min(448.0f * 6.0f / global_amax, kFltMax);
  if (global_amax == 0.0f || genc == 0.0f) genc = 1.0f;
  const float gdec = 1.0f / genc;
  EXPECT_EQ(q.tensor_scale, gdec);
  const RefEncoder e4m3(kE4M3), e2m1(kE2M1);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t tr = r / p.tile.rows, tc = c / p.tile.cols;
      float amax = 0.0f;
      for (std::int64_t rr = tr * p.tile.rows; rr < std::min(rows, (tr + 1) * p.tile.rows); ++rr) {
        for (std::int64_t cc = tc * p.tile.cols; cc < (tc + 1) * p.tile.cols; ++cc) {
          amax = std::max(amax, std::fabs(x[rr * cols + cc]));
        }
      }
      float ds = nan_min(amax * (genc * (1.0f / 6.0f)), kFltMax);
      ds = std::clamp(ds, -448.0f, 448.0f);
      ds = static_cast<float>(
          ref_decode(e4m3.encode(ds, RefRounding::nearest_even, true, 0), kE4M3));
      ASSERT_EQ(q.scales[static_cast<std::size_t>(tr * q.tile_grid_cols() + tc)], ds);
      const float enc = nan_min(1.0f / (ds * gdec), kFltMax);
      const std::int64_t i = r * cols + c;
      const float v = std::clamp(x[i] * enc, -6.0f, 6.0f);
      const std::uint32_t random = numerics::stochastic_bits(s.seed, s.counter + i);
      std::uint32_t want = e2m1.encode(
          v,
          p.rounding == Rounding::stochastic ? RefRounding::stochastic : RefRounding::nearest_even,
          true, random);
      if (v == 0.0f && std::signbit(v)) want = 0;  // TE's cast: -0.0 is code 0
      ASSERT_EQ(code_at(q, i), want) << r << "," << c << " x=" << x[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, Nvfp4,
                         ::testing::Values(Nvfp4Case{{1, 16}, false, Rounding::nearest_even},
                                           Nvfp4Case{{16, 16}, false, Rounding::nearest_even},
                                           Nvfp4Case{{1, 16}, true, Rounding::nearest_even},
                                           Nvfp4Case{{1, 16}, false, Rounding::stochastic},
                                           Nvfp4Case{{1, 16}, true, Rounding::stochastic}),
                         [](const auto& info) {
                           return std::to_string(info.param.tile.rows) + "x16" +
                                  (info.param.hadamard ? "_rht" : "") + "_" +
                                  std::string(numerics::rounding_name(info.param.rounding));
                         });

TEST(Nvfp4Edges, HandDerivedBlockAndSpecials) {
  // Global amax 6: global encode 448; decode scale e4m3(6 * 448 * fl(1/6)) = 448; encode
  // scale 1 / (448 / 448) = 1: the elements are x itself in e2m1.
  std::vector<float> x(16, 0.0f);
  x[0] = 6.0f;
  x[1] = -1.25f;  // tie between 1 and 1.5: even -> 1
  x[2] = 0.3f;    // -> 0.5
  x[3] = -0.0f;   // -> +0, as TE's reference casts it
  BlockQuantized q = numerics::quantize_nvfp4(x.data(), 1, 16, {});
  EXPECT_EQ(q.tensor_scale, 1.0f / 448.0f);
  EXPECT_EQ(q.scales[0], 448.0f);
  EXPECT_EQ(code_at(q, 0), 0x7u);
  EXPECT_EQ(code_at(q, 1), 0xau);
  EXPECT_EQ(code_at(q, 2), 0x1u);
  EXPECT_EQ(code_at(q, 3), 0x0u);
  EXPECT_EQ(q.scale_codes(), std::vector<std::uint8_t>{0x7e});
  std::vector<float> back(16);
  numerics::dequantize(q, back.data());
  // (6 * 448) * fl(1/448) = 42 * fl(1/7) = 6.00000027 rounds to 6 + 2^-21 in float32; the
  // smaller ones come back exactly.
  EXPECT_EQ(back[0], 6.0f + std::ldexp(1.0f, -21));
  EXPECT_EQ(back[1], -1.0f);
  EXPECT_EQ(back[2], 0.5f);
  EXPECT_EQ(q.bits_per_element(), 4.5);
  // All zero: global scale 1, block decode scale 0, codes 0.
  std::fill(x.begin(), x.end(), 0.0f);
  q = numerics::quantize_nvfp4(x.data(), 1, 16, {});
  EXPECT_EQ(q.tensor_scale, 1.0f);
  EXPECT_EQ(q.scales[0], 0.0f);
  // A NaN: every scale NaN, codes 0.
  x[5] = kNaN;
  q = numerics::quantize_nvfp4(x.data(), 1, 16, {});
  EXPECT_TRUE(std::isnan(q.scales[0]));
  EXPECT_EQ(q.elements, numerics::CodeBytes(8, 0));
}

TEST(Hadamard16, ExactOnSmallIntegersAgainstTheMatrix) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>((i * 7) % 11 - 5);
  std::vector<float> y = x;
  numerics::hadamard16_rows(y.data(), 2, 16);
  for (int g = 0; g < 2; ++g) {
    for (int j = 0; j < 16; ++j) {
      double sum = 0;
      for (int i = 0; i < 16; ++i)
        sum += numerics::kNvfp4HadamardSigns[i] * h16(i, j) * x[g * 16 + i];
      EXPECT_EQ(static_cast<double>(y[g * 16 + j]), sum / 4.0) << g << "," << j;
    }
  }
  EXPECT_THROW(numerics::hadamard16_rows(y.data(), 1, 24), Error);
}

TEST(Hadamard16, FloatsRoundAsTheScalarButterflyInItsOrder) {
  // Random floats of all magnitudes (the sums round): bit for bit as the butterfly written
  // out here in float32 (signs, then pairs (j, j + h) for h = 1, 2, 4, 8 as (a + b, a - b),
  // then 1/4), including infinities and a NaN's position.
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> e(-60, 60);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(16 * 200);
  for (float& v : x) v = std::ldexp(d(rng), e(rng));
  x[16 * 7 + 3] = std::numeric_limits<float>::infinity();
  x[16 * 9 + 11] = kNaN;
  std::vector<float> want = x;
  for (std::size_t g = 0; g < want.size(); g += 16) {
    float* v = want.data() + g;
    for (int i = 0; i < 16; ++i) v[i] = v[i] * static_cast<float>(numerics::kNvfp4HadamardSigns[i]);
    for (int h = 1; h < 16; h *= 2) {
      for (int i = 0; i < 16; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          const float a = v[j], b = v[j + h];
          v[j] = a + b;
          v[j + h] = a - b;
        }
      }
    }
    for (int i = 0; i < 16; ++i) v[i] = v[i] * 0.25f;
  }
  std::vector<float> got = x, twin = x;
  numerics::hadamard16_rows(got.data(), 100, 32);
  numerics::hadamard16_rows_ref(twin.data(), 100, 32);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isnan(want[i])) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(twin[i]), std::bit_cast<std::uint32_t>(want[i])) << i;
    }
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << i;
    }
  }
}

class Fp8Blocks : public ::testing::TestWithParam<std::tuple<int, bool, Rounding>> {};

TEST_P(Fp8Blocks, MatchTransformerEngineFormulasAndTheScalarTwin) {
  const auto [tile_kind, pow2, rounding] = GetParam();
  const std::int64_t rows = 130, cols = 200;
  const std::vector<float> x = matrix(rows, cols, 6);
  numerics::Fp8BlockSettings s;
  s.tile = tile_kind == 0   ? numerics::TileShape{1, 128}
           : tile_kind == 1 ? numerics::TileShape{128, 128}
                            : numerics::TileShape{rows, cols};  // current scaling
  s.element = tile_kind == 2 ? Format::float8_e5m2 : Format::float8_e4m3;
  s.power_of_two = pow2;
  s.rounding = rounding;
  s.seed = 2;
  const BlockQuantized q = numerics::quantize_fp8_blocks(x.data(), rows, cols, s);
  expect_same(q, numerics::quantize_fp8_blocks_ref(x.data(), rows, cols, s));
  const RefFormat& rf = s.element == Format::float8_e4m3 ? kE4M3 : kE5M2;
  const float fmax = s.element == Format::float8_e4m3 ? 448.0f : 57344.0f;
  const RefEncoder enc(rf);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t tr = r / s.tile.rows, tc = c / s.tile.cols;
      float amax = 0.0f;
      for (std::int64_t rr = tr * s.tile.rows; rr < std::min(rows, (tr + 1) * s.tile.rows); ++rr) {
        for (std::int64_t cc = tc * s.tile.cols; cc < std::min(cols, (tc + 1) * s.tile.cols);
             ++cc) {
          amax = std::max(amax, std::fabs(x[rr * cols + cc]));
        }
      }
      float scale = 1.0f;
      if (amax != 0.0f) {
        scale = fmax / amax;
        if (pow2) {
          int e = 0;
          std::frexp(scale, &e);
          scale = std::ldexp(1.0f, e - 1);
        }
      }
      ASSERT_EQ(q.scales[static_cast<std::size_t>(tr * q.tile_grid_cols() + tc)], 1.0f / scale);
      const std::int64_t i = r * cols + c;
      const RefRounding rr =
          rounding == Rounding::stochastic ? RefRounding::stochastic : RefRounding::nearest_even;
      ASSERT_EQ(code_at(q, i), enc.encode(x[i] * scale, rr, true,
                                          numerics::stochastic_bits(s.seed, s.counter + i)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiles, Fp8Blocks,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Bool(),
                                            ::testing::Values(Rounding::nearest_even,
                                                              Rounding::stochastic)));

TEST(Fp8Scale, HandDerived) {
  const Format e4 = Format::float8_e4m3;
  EXPECT_EQ(numerics::fp8_encode_scale(448.0f, e4, false, 0.0f), 1.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(1.0f, e4, false, 0.0f), 448.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(1.0f, e4, true, 0.0f), 256.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(0.0f, e4, true, 0.0f), 1.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(kNaN, e4, true, 0.0f), 1.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(std::numeric_limits<float>::infinity(), e4, true, 0.0f),
            1.0f);
  EXPECT_EQ(numerics::fp8_encode_scale(1e-45f, e4, false, 0.0f), kFltMax);  // 448 / 1e-45 overflows
  EXPECT_EQ(numerics::fp8_encode_scale(0.0f, e4, false, 0.5f), 896.0f);     // epsilon floor
}

}  // namespace
}  // namespace mantissa::testing

namespace mantissa::testing {
namespace {

TEST(Nvfp4Parts, PartsWithTheMatrixGlobalAmaxGiveTheWholeMatrixBits) {
  // 64 x 32 in two parts of 32 rows; the matrix's amax (2^9) lies in the second part, so a
  // part scaled by its own amax would differ. Stochastic rounding continues the stream.
  const std::int64_t rows = 64, cols = 32;
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = d(rng);
  x[40 * cols + 7] = 512.0f;
  for (const bool hadamard : {false, true}) {
    numerics::Nvfp4Settings s;
    s.hadamard = hadamard;
    s.rounding = Rounding::stochastic;
    s.seed = 4;
    s.counter = 10;
    // The global amax: |x| at most, after the rotation where asked (the rotation's largest
    // output here: the group of 16 holding 512 spreads it as 512 / 4 = 128 plus the others).
    std::vector<float> rotated = x;
    if (hadamard) numerics::hadamard16_rows(rotated.data(), rows, cols);
    float want = 0.0f;
    for (const float v : rotated) want = std::max(want, std::fabs(v));
    const float global = numerics::nvfp4_global_amax(x.data(), rows, cols, hadamard);
    EXPECT_EQ(global, want);
    EXPECT_LT(global, hadamard ? 200.0f : 513.0f);
    const BlockQuantized whole = numerics::quantize_nvfp4_ref(x.data(), rows, cols, s);
    BlockQuantized top = numerics::quantize_nvfp4_part(x.data(), 32, cols, s, global);
    numerics::Nvfp4Settings rest = s;
    rest.counter += static_cast<std::uint64_t>(32 * cols);
    const BlockQuantized bottom =
        numerics::quantize_nvfp4_part(x.data() + 32 * cols, 32, cols, rest, global);
    EXPECT_EQ(top.tensor_scale, whole.tensor_scale);
    EXPECT_EQ(bottom.tensor_scale, whole.tensor_scale);
    top.elements.insert(top.elements.end(), bottom.elements.begin(), bottom.elements.end());
    top.scales.insert(top.scales.end(), bottom.scales.begin(), bottom.scales.end());
    EXPECT_EQ(top.elements, whole.elements) << hadamard;
    EXPECT_EQ(top.scales, whole.scales) << hadamard;
    // A part scaled by its own amax is another quantization.
    EXPECT_NE(numerics::quantize_nvfp4(x.data(), 32, cols, s).tensor_scale, whole.tensor_scale);
  }
  EXPECT_THROW(numerics::nvfp4_global_amax(x.data(), 2, 8, true), Error);  // 8 columns
  EXPECT_THROW(numerics::nvfp4_global_amax(x.data(), -1, 8, false), Error);
}

}  // namespace
}  // namespace mantissa::testing

namespace mantissa::testing {
namespace {

TEST(Nvfp4TileScales, TheBatchGivesTheCodecsScalesForSampledAmaxes) {
  // Every 1,021st float32 bit pattern from 0 to infinity (e4m3's subnormal and normal ranges,
  // the 448 clamp, amaxes whose decode scale underflows), infinity and NaN; global encode
  // scales from the smallest to the largest the recipe makes.
  std::vector<std::uint32_t> amax;
  for (std::uint64_t b = 0; b <= 0x7f800000u; b += 1021)
    amax.push_back(static_cast<std::uint32_t>(b));
  amax.push_back(0x7f800000u);
  amax.push_back(0x7fc00000u);
  // Every tie between neighbouring e4m3 values and the floats either side (with the global
  // encode scale 6 the multiplier is exactly 1: the amax is the value rounded).
  for (std::uint32_t c = 0; c + 1 < 0x7f; ++c) {
    const auto lo = static_cast<float>(ref_decode(c, kE4M3));
    const auto hi = static_cast<float>(ref_decode(c + 1, kE4M3));
    const std::uint32_t mid = std::bit_cast<std::uint32_t>((lo + hi) / 2.0f);
    for (const std::uint32_t b : {mid - 1, mid, mid + 1}) amax.push_back(b);
  }
  std::vector<float> decode(amax.size()), encode(amax.size());
  std::size_t subnormal = 0, clamped = 0;
  ASSERT_EQ(6.0f * (1.0f / 6.0f), 1.0f);
  for (const float global_encode : {1.0f, 6.0f, 2688.0f / 3.0e-30f, 1.0e-30f, kFltMax}) {
    numerics::nvfp4_tile_scales(amax.data(), amax.size(), global_encode, decode.data(),
                                encode.data());
    for (std::size_t i = 0; i < amax.size(); ++i) {
      const numerics::Nvfp4TileScale want =
          numerics::nvfp4_tile_scale(std::bit_cast<float>(amax[i]), global_encode);
      if (std::isnan(want.decode)) {
        ASSERT_TRUE(std::isnan(decode[i])) << i;
        ASSERT_EQ(encode[i], 0.0f) << i;
        continue;
      }
      ASSERT_EQ(std::bit_cast<std::uint32_t>(decode[i]), std::bit_cast<std::uint32_t>(want.decode))
          << "amax bits " << amax[i] << " global encode " << global_encode;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(encode[i]), std::bit_cast<std::uint32_t>(want.encode))
          << "amax bits " << amax[i] << " global encode " << global_encode;
      subnormal += want.decode > 0.0f && want.decode < 0x1p-6f;
      clamped += want.decode == 448.0f;
    }
  }
  EXPECT_GT(subnormal, 100u);
  EXPECT_GT(clamped, 100u);
}

}  // namespace
}  // namespace mantissa::testing
