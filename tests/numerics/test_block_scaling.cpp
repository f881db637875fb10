// The block quantizers against a reference written here from the definitions (exact
// arithmetic in double for the MX scale rules; the recipes' float32 formulas step by step for
// NVFP4 and fp8 blocks; every element through the exact codec reference), their scalar twins
// bit for bit, hand-derived edge cases, and the Hadamard rotation against its matrix.
#include <gtest/gtest.h>

#include <algorithm>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "exact_reference.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::testing {
namespace {

using numerics::BlockQuantized;
using numerics::Format;
using numerics::MxScaleRule;
using numerics::Rounding;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The formats again, apart from the library's table: exponent, mantissa, bias, emax, max.
struct ElementRef {
  Format format;
  RefFormat ref;
  int emax;
  double max;
};
const std::vector<ElementRef>& elements() {
  static const std::vector<ElementRef> e = {
      {Format::float8_e4m3, {4, 3, 7, false}, 8, 448.0},
      {Format::float8_e5m2, {5, 2, 15, true}, 15, 57344.0},
      {Format::float6_e2m3, {2, 3, 1, false, false}, 2, 7.5},
      {Format::float6_e3m2, {3, 2, 3, false, false}, 4, 28.0},
      {Format::float4_e2m1, {2, 1, 1, false, false}, 2, 6.0},
  };
  return e;
}

RefRounding ref_rounding(Rounding r) {
  return r == Rounding::nearest_even  ? RefRounding::nearest_even
         : r == Rounding::toward_zero ? RefRounding::toward_zero
                                      : RefRounding::stochastic;
}

// The MX scale exponent by exact arithmetic (amax > 0 finite), before clamping.
int ref_mx_exponent(double amax, const ElementRef& e, MxScaleRule rule) {
  int f2 = 0;
  const double f = 2.0 * std::frexp(amax, &f2);  // amax = f * 2^(f2 - 1), 1 <= f < 2
  const int floor_log2 = f2 - 1;
  switch (rule) {
    case MxScaleRule::floor:
      return floor_log2 - e.emax;
    case MxScaleRule::ceil:
      return floor_log2 + (f > 1.0 ? 1 : 0) - e.emax;
    case MxScaleRule::even: {
      const double m = std::ldexp(1.0, e.ref.mantissa_bits);
      const double rounded = std::floor(f * m + 0.5) / m;  // ties away from zero
      return floor_log2 + (rounded >= 2.0 ? 1 : 0) - e.emax;
    }
    case MxScaleRule::rceil: {
      int n = -300;  // the smallest n with 2^n * max >= amax
      while (std::ldexp(e.max, n) < amax) ++n;
      return n;
    }
  }
  return 0;
}

std::uint32_t ref_mx_field(float amax, const ElementRef& e, MxScaleRule rule) {
  if (std::isnan(amax)) return 0xff;
  if (std::isinf(amax)) return 0xfe;
  if (amax == 0.0f) return 0x00;
  return static_cast<std::uint32_t>(std::clamp(ref_mx_exponent(amax, e, rule), -127, 127) + 127);
}

// x * 2^-k through the exact codec reference (saturating); below float32's normal range the
// product rounds to a signed zero in every mode (its dropped fraction is below 2^-32).
std::uint32_t ref_element(float x, int k, const ElementRef& e, Rounding r, std::uint32_t random) {
  const double v = std::ldexp(static_cast<double>(x), -k);
  const std::uint32_t sign_bit = 1u << (e.ref.exponent_bits + e.ref.mantissa_bits);
  if (std::isfinite(v) && std::fabs(v) < std::ldexp(1.0, -126))
    return std::signbit(v) ? sign_bit : 0;
  return RefEncoder(e.ref).encode(static_cast<float>(v), ref_rounding(r), true, random);
}

std::uint32_t code_at(const BlockQuantized& q, std::int64_t i) {
  if (q.element != Format::float4_e2m1) return q.elements[static_cast<std::size_t>(i)];
  return (q.elements[static_cast<std::size_t>(i / 2)] >> (4 * (i % 2))) & 0xfu;
}

void expect_same(const BlockQuantized& a, const BlockQuantized& b, const std::string& what) {
  ASSERT_EQ(a.elements, b.elements) << what;
  ASSERT_EQ(a.scales.size(), b.scales.size()) << what;
  for (std::size_t i = 0; i < a.scales.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a.scales[i]), std::bit_cast<std::uint32_t>(b.scales[i]))
        << what << " scale " << i;
  }
  ASSERT_EQ(std::bit_cast<std::uint32_t>(a.tensor_scale),
            std::bit_cast<std::uint32_t>(b.tensor_scale));
}

// Rows of very different magnitudes, an all-zero row, NaN, infinity, float32 subnormals.
std::vector<float> test_matrix(std::int64_t rows, std::int64_t cols, unsigned seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const int scale = static_cast<int>(rng() % 80) - 40;
    for (std::int64_t c = 0; c < cols; ++c) {
      x[r * cols + c] = static_cast<float>(std::ldexp(u(rng) * std::exp2(4 * u(rng)), scale));
    }
  }
  if (rows > 3) std::fill(x.begin() + cols, x.begin() + 2 * cols, 0.0f);
  if (rows > 3) x[2 * cols] = std::ldexp(1.0f, -140);  // a subnormal amax in row 2's first tile
  if (specials && rows > 6) {
    x[4 * cols + 3] = kNaN;
    x[5 * cols + 1] = kInf;
    x[6 * cols] = -kInf;
  }
  return x;
}

class MxQuantize : public ::testing::TestWithParam<std::tuple<int, MxScaleRule, Rounding>> {};

TEST_P(MxQuantize, MatchesTheExactReferenceAndTheScalarTwin) {
  const ElementRef& e = elements()[static_cast<std::size_t>(std::get<0>(GetParam()))];
  for (numerics::TileShape tile : {numerics::TileShape{1, 32}, numerics::TileShape{32, 1}}) {
    const std::int64_t rows = 9, cols = 45;  // partial tiles both ways
    const std::vector<float> x = test_matrix(rows, cols, 3, true);
    numerics::MxSettings s;
    s.element = e.format;
    s.rule = std::get<1>(GetParam());
    s.rounding = std::get<2>(GetParam());
    s.tile = tile;
    s.seed = 11;
    s.counter = 1000;
    const BlockQuantized q = numerics::quantize_mx(x.data(), rows, cols, s);
    expect_same(q, numerics::quantize_mx_ref(x.data(), rows, cols, s), "fast vs ref");
    ASSERT_EQ(q.scales.size(), static_cast<std::size_t>(q.tile_grid_rows() * q.tile_grid_cols()));
    for (std::int64_t tr = 0; tr < q.tile_grid_rows(); ++tr) {
      for (std::int64_t tc = 0; tc < q.tile_grid_cols(); ++tc) {
        float amax = 0.0f;
        bool nan = false;
        for (std::int64_t r = tr * tile.rows; r < std::min(rows, (tr + 1) * tile.rows); ++r) {
          for (std::int64_t c = tc * tile.cols; c < std::min(cols, (tc + 1) * tile.cols); ++c) {
            nan = nan || std::isnan(x[r * cols + c]);
            amax = std::max(amax, std::fabs(x[r * cols + c]));
          }
        }
        const std::uint32_t field = ref_mx_field(nan ? kNaN : amax, e, s.rule);
        const float scale = q.scales[static_cast<std::size_t>(tr * q.tile_grid_cols() + tc)];
        ASSERT_EQ(q.scale_codes()[static_cast<std::size_t>(tr * q.tile_grid_cols() + tc)], field)
            << "tile " << tr << "," << tc << " amax " << amax;
        if (field == 0xff) {
          EXPECT_TRUE(std::isnan(scale));
        } else {
          EXPECT_EQ(static_cast<double>(scale), std::ldexp(1.0, static_cast<int>(field) - 127));
        }
        for (std::int64_t r = tr * tile.rows; r < std::min(rows, (tr + 1) * tile.rows); ++r) {
          for (std::int64_t c = tc * tile.cols; c < std::min(cols, (tc + 1) * tile.cols); ++c) {
            const std::int64_t i = r * cols + c;
            const std::uint32_t want =
                field == 0xff ? 0u
                              : ref_element(x[i], static_cast<int>(field) - 127, e, s.rounding,
                                            numerics::stochastic_bits(s.seed, s.counter + i));
            ASSERT_EQ(code_at(q, i), want)
                << numerics::name(e.format) << " element " << r << "," << c << " x=" << x[i];
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, MxQuantize,
    ::testing::Combine(::testing::Range(0, 5),
                       ::testing::Values(MxScaleRule::floor, MxScaleRule::rceil, MxScaleRule::ceil,
                                         MxScaleRule::even),
                       ::testing::Values(Rounding::nearest_even, Rounding::toward_zero,
                                         Rounding::stochastic)),
    [](const auto& info) {
      return std::string(numerics::name(elements()[std::get<0>(info.param)].format)) + "_" +
             std::string(name_of(numerics::kMxScaleRuleNames, std::get<1>(info.param))) + "_" +
             std::string(numerics::rounding_name(std::get<2>(info.param)));
    });

TEST(MxScale, HandDerivedRulesOnOneBlock) {
  // fp4 (emax 2, max 6), amax 7 = 1.75 * 2^2: floor 2^0 (7 saturates to 6), ceil 2^1,
  // even: 1.75 rounds to 2 -> 2^1, rceil: 7 / 6 rounds up to 2 -> 2^1.
  const Format f = Format::float4_e2m1;
  EXPECT_EQ(numerics::mx_scale_field(7.0f, f, MxScaleRule::floor), 127);
  EXPECT_EQ(numerics::mx_scale_field(7.0f, f, MxScaleRule::ceil), 128);
  EXPECT_EQ(numerics::mx_scale_field(7.0f, f, MxScaleRule::even), 128);
  EXPECT_EQ(numerics::mx_scale_field(7.0f, f, MxScaleRule::rceil), 128);
  // amax 5 = 1.25 * 2^2: floor and even 2^0, ceil 2^1, rceil 5/6 -> 2^0.
  EXPECT_EQ(numerics::mx_scale_field(5.0f, f, MxScaleRule::even), 127);
  EXPECT_EQ(numerics::mx_scale_field(5.0f, f, MxScaleRule::ceil), 128);
  EXPECT_EQ(numerics::mx_scale_field(5.0f, f, MxScaleRule::rceil), 127);
  // e4m3: amax 448 -> floor 2^0; 449 -> rceil 2^1; 2^-140 (float32 subnormal) -> 2^-127.
  EXPECT_EQ(numerics::mx_scale_field(448.0f, Format::float8_e4m3, MxScaleRule::floor), 127);
  EXPECT_EQ(numerics::mx_scale_field(448.0f, Format::float8_e4m3, MxScaleRule::rceil), 127);
  EXPECT_EQ(numerics::mx_scale_field(449.0f, Format::float8_e4m3, MxScaleRule::rceil), 128);
  for (MxScaleRule r :
       {MxScaleRule::floor, MxScaleRule::rceil, MxScaleRule::ceil, MxScaleRule::even}) {
    EXPECT_EQ(numerics::mx_scale_field(std::ldexp(1.0f, -140), Format::float8_e4m3, r), 0);
    EXPECT_EQ(numerics::mx_scale_field(0.0f, Format::float8_e4m3, r), 0);
    EXPECT_EQ(numerics::mx_scale_field(kInf, Format::float8_e4m3, r), 0xfe);
    EXPECT_EQ(numerics::mx_scale_field(kNaN, Format::float8_e4m3, r), 0xff);
    EXPECT_EQ(numerics::mx_scale_field(std::numeric_limits<float>::max(), Format::float8_e4m3, r),
              r == MxScaleRule::floor ? 127 + 119 : 127 + 120);  // even: 1.99.. rounds to 2
  }
  // rceil in Transformer Engine's float32: amax * fl(1/448) = 2^-127 exactly for this amax
  // (a float32 subnormal quotient rounds), so 2^-127, where exact ceil would give 2^-126.
  const float amax =
      std::bit_cast<float>(std::bit_cast<std::uint32_t>(std::ldexp(448.0f, -127)) + 1);
  EXPECT_EQ(numerics::mx_scale_field(amax, Format::float8_e4m3, MxScaleRule::rceil), 0);
  EXPECT_THROW(numerics::mx_emax(Format::bfloat16), Error);
}

// The E8M0 field each rule gives for |amax|'s float32 bits u, in double arithmetic (every
// float32 value and every product of two is exact there): floor / ceil of log2, the
// significand rounded to the element's mantissa bits (ties away) for even, and for rceil
// ceil(log2) of the float32 product amax * fl(1 / max), as Transformer Engine computes it.
std::uint32_t scale_field_reference(std::uint32_t u, Format element, MxScaleRule rule) {
  if (u > 0x7f800000u) return 0xff;
  if (u == 0x7f800000u) return 0xfe;
  if (u == 0) return 0;
  const double max = numerics::traits(element).max;
  const int emax = std::ilogb(max), m = numerics::layout(element).mantissa_bits;
  const double a = std::bit_cast<float>(u);
  const auto clamp_field = [](long e) {
    return static_cast<std::uint32_t>(std::min(254L, std::max(0L, e + 127)));
  };
  const int fl = std::ilogb(a);
  const bool power = a == std::ldexp(1.0, fl);
  switch (rule) {
    case MxScaleRule::floor:
      return clamp_field(fl - emax);
    case MxScaleRule::ceil:
      return clamp_field((power ? fl : fl + 1) - emax);
    case MxScaleRule::even: {
      const double sig = std::floor(std::ldexp(a, m - fl) + 0.5);  // in [2^m, 2^(m+1)]
      return clamp_field((sig >= std::ldexp(1.0, m + 1) ? fl + 1 : fl) - emax);
    }
    case MxScaleRule::rceil: {
      const float recip = static_cast<float>(1.0 / max);
      const double q = static_cast<float>(a * static_cast<double>(recip));
      if (q == 0) return 0;
      const int ql = std::ilogb(q);
      return clamp_field(q == std::ldexp(1.0, ql) ? ql : ql + 1);
    }
  }
  return 0;
}

TEST(MxScaleField, EveryRuleMatchesDoubleArithmeticAcrossFloat32) {
  // Every exponent field with mantissas at both ends, around the half and on a stride
  // through the rest: the batch call (as the quantizers' bands make it) and the single one.
  std::vector<std::uint32_t> bits;
  for (std::uint32_t e = 0; e < 256; ++e) {
    for (std::uint32_t mant : {0x0u, 0x1u, 0x2u, 0x1fffffu, 0x200000u, 0x3fffffu, 0x400000u,
                               0x400001u, 0x5fffffu, 0x600000u, 0x7ffffeu, 0x7fffffu}) {
      bits.push_back(e << 23 | mant);
    }
    for (std::uint32_t mant = 0x1357u; mant < 0x800000u; mant += 0x2f3d1u)
      bits.push_back(e << 23 | mant);
  }
  std::vector<std::uint8_t> fields(bits.size());
  for (Format element : numerics::kBlockElementFormats) {
    for (MxScaleRule rule :
         {MxScaleRule::floor, MxScaleRule::ceil, MxScaleRule::even, MxScaleRule::rceil}) {
      numerics::mx_scale_fields(bits.data(), bits.size(), element, rule, fields.data());
      for (std::size_t i = 0; i < bits.size(); ++i) {
        const std::uint32_t want = scale_field_reference(bits[i], element, rule);
        ASSERT_EQ(fields[i], want) << numerics::name(element) << " rule " << static_cast<int>(rule)
                                   << " amax bits " << bits[i];
        ASSERT_EQ(
            numerics::mx_scale_field(std::bit_cast<float>(bits[i] | 0x80000000u), element, rule),
            want);  // the sign ignored
      }
    }
  }
}

TEST(MxQuantizeEdges, ZeroNaNInfinityAndAShortBlock) {
  // One row of 40 fp4 elements in 1 x 32 blocks: the second block is 8 long.
  std::vector<float> x(40, 0.0f);
  x[0] = 7.0f;   // floor: scale 1, saturates to 6
  x[1] = 0.26f;  // -> 0.5
  x[33] = -0.75f;
  numerics::MxSettings s;
  s.element = Format::float4_e2m1;
  BlockQuantized q = numerics::quantize_mx(x.data(), 1, 40, s);
  ASSERT_EQ(q.scale_codes(), (std::vector<std::uint8_t>{127, 127 - 3}));  // 0.75 -> 2^(-1-2)
  EXPECT_EQ(code_at(q, 0), 0x7u);
  EXPECT_EQ(code_at(q, 1), 0x1u);
  EXPECT_EQ(code_at(q, 33), 0xfu);  // -0.75 / 2^-3 = -6
  std::vector<float> back(40);
  numerics::dequantize(q, back.data());
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[1], 0.5f);
  EXPECT_EQ(back[33], -0.75f);
  EXPECT_EQ(q.bits_per_element(), 4.25);
  // All zero: the smallest scale, zero codes. NaN: scale NaN, codes 0, values NaN.
  std::fill(x.begin(), x.end(), 0.0f);
  x[35] = kNaN;
  q = numerics::quantize_mx(x.data(), 1, 40, s);
  EXPECT_EQ(q.scale_codes(), (std::vector<std::uint8_t>{0, 0xff}));
  for (std::int64_t i = 0; i < 40; ++i) EXPECT_EQ(code_at(q, i), 0u);
  numerics::dequantize(q, back.data());
  EXPECT_EQ(back[0], 0.0f);
  EXPECT_TRUE(std::isnan(back[32]));
  // Infinity: scale 2^127; e4m3 saturates it, e5m2 keeps it.
  x[35] = kInf;
  x[36] = 1.0f;
  s.element = Format::float8_e5m2;
  q = numerics::quantize_mx(x.data(), 1, 40, s);
  EXPECT_EQ(q.scale_codes()[1], 0xfe);
  EXPECT_EQ(code_at(q, 35), 0x7cu);
  EXPECT_EQ(code_at(q, 36), 0x00u);
  s.element = Format::float8_e4m3;
  q = numerics::quantize_mx(x.data(), 1, 40, s);
  EXPECT_EQ(code_at(q, 35), 0x7eu);
}

TEST(BlockQuantizeErrors, NameTheSetting) {
  const float x[4] = {};
  numerics::MxSettings s;
  s.element = Format::float16;
  EXPECT_THROW(numerics::quantize_mx(x, 2, 2, s), Error);
  s.element = Format::float4_e2m1;
  s.tile = {0, 32};
  EXPECT_THROW(numerics::quantize_mx(x, 2, 2, s), Error);
  EXPECT_THROW(numerics::quantize_mx(x, -1, 2, numerics::MxSettings{}), Error);
  numerics::Nvfp4Settings n;
  n.hadamard = true;
  EXPECT_THROW(numerics::quantize_nvfp4(x, 1, 4, n), Error);  // 4 columns: not a multiple of 16
  numerics::Fp8BlockSettings b;
  b.element = Format::float4_e2m1;
  EXPECT_THROW(numerics::quantize_fp8_blocks(x, 2, 2, b), Error);
  try {
    numerics::quantize_mx(x, 2, 2, numerics::MxSettings{Format::bfloat16});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MX element format: bfloat16"), std::string::npos);
  }
  // Every format that is not one of the five elements is refused, the E8M0 scale format too
  // (its table entry once read as an element's).
  for (std::size_t i = 0; i < numerics::kFormatCount; ++i) {
    const auto f = static_cast<Format>(i);
    const bool element =
        std::find(numerics::kBlockElementFormats.begin(), numerics::kBlockElementFormats.end(),
                  f) != numerics::kBlockElementFormats.end();
    if (!element) {
      EXPECT_THROW(numerics::mx_emax(f), Error) << numerics::name(f);
      EXPECT_THROW(numerics::quantize_mx(x, 2, 2, numerics::MxSettings{f}), Error)
          << numerics::name(f);
    }
  }
}

TEST(BlockScaling, DequantizeRefusesFieldsThatDisagree) {
  // The library audit of 2026-11-28: BlockQuantized's fields are public; sizes that do not
  // match its codes and scales were read past their ends (a crash), a tile of 0 divided by 0.
  std::vector<float> x(4 * 64, 0.5f), out(4 * 64);
  const BlockQuantized good = numerics::quantize_mx(x.data(), 4, 64, {});
  const auto error = [&](BlockQuantized q) {
    try {
      numerics::dequantize(q, out.data());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  BlockQuantized q = good;
  q.rows = 8;
  EXPECT_NE(error(q).find("256 element bytes for 8 x 64"), std::string::npos) << error(q);
  q = good;
  q.tile = {0, 0};
  EXPECT_NE(error(q).find("tile of 0 x 0"), std::string::npos) << error(q);
  q = good;
  q.scales.pop_back();
  EXPECT_NE(error(q).find("7 scales for a grid of 4 x 2 tiles"), std::string::npos) << error(q);
  q = good;
  q.element = Format::float32;
  EXPECT_NE(error(q).find("not a block element format"), std::string::npos) << error(q);
  numerics::dequantize(good, out.data());
  EXPECT_EQ(out[0], 0.5f);
  // An fp6 code with a bit above its 6 once dequantized as 0 without a word.
  numerics::MxSettings fp6;
  fp6.element = Format::float6_e2m3;
  q = numerics::quantize_mx(x.data(), 4, 64, fp6);
  q.elements[5] |= 0x40;
  EXPECT_EQ(error(q), "dequantize: code " + std::to_string(q.elements[5]) +
                          " at index 5 does not fit float6_e2m3 (6 bits: expected 0..63)");
}

}  // namespace
}  // namespace mantissa::testing
