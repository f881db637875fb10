// The element and scale formats of block-scaled tensors (fp4 e2m1, fp6 e2m3 / e3m2, E8M0):
// round to nearest against the ml_dtypes fixtures at every rounding boundary they list and
// on random patterns, E8M0 in every mode against an exact reference, fp4 packing by hand.
// (fp4 and fp6 in every mode against the exact reference: the EncodeBoundaries,
// EncodeRandom and Stochastic suites, which cover every sign/exponent/mantissa format.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "block_format_fixtures.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/fp4_packing.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "simd_paths.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;
using numerics::Overflow;
using numerics::Rounding;

// The boundaries of a fixture (two patterns either side of each) and random patterns.
std::vector<float> fixture_inputs(const RunFixture& fixture) {
  std::vector<float> out;
  for (std::uint32_t b : fixture.boundaries()) {
    for (std::uint32_t d = 0; d < 5; ++d) out.push_back(std::bit_cast<float>(b + d - 2u));
  }
  std::mt19937 rng(26);
  for (int i = 0; i < (1 << 18); ++i)
    out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return out;
}

// ml_dtypes 0.6.0 rounds the float32 patterns strictly between 2^-127 and 1.5 * 2^-127 (all
// float32 subnormals) to E8M0 field 1 (2^-126), from float64 too; the nearest power of two
// is 2^-127 (field 0), which mantissa gives. Those inputs are checked against the exact
// reference (E8M0.EveryModeMatchesTheExactReference) instead.
bool ml_dtypes_e8m0_subnormal_deviation(Format f, std::uint32_t bits) {
  return f == Format::float8_e8m0 && bits > 0x00400000u && bits < 0x00600000u;
}

class BlockFormatFixture : public ::testing::TestWithParam<Format> {};

TEST_P(BlockFormatFixture, NearestEvenMatchesMlDtypesAtEveryBoundaryAndOnRandomPatterns) {
  const Format f = GetParam();
  const RunFixture fixture(f);
  ASSERT_GE(fixture.boundaries().size(), 17u);  // fp4: 2 x 8 codes + NaN runs
  const std::vector<float> in = fixture_inputs(fixture);
  std::vector<std::uint8_t> bulk(in.size());
  numerics::encode_array(in.data(), in.size(), f, bulk.data());
  const Overflow o = numerics::traits(f).default_overflow;
  std::size_t compared = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(in[i]);
    const int want = fixture.code(bits);
    if (want < 0) continue;  // NaN: ml_dtypes gives zero, mantissa max (or 0xFF for E8M0)
    if (ml_dtypes_e8m0_subnormal_deviation(f, bits)) continue;
    ++compared;
    ASSERT_EQ(numerics::encode(in[i], numerics::layout(f), Rounding::nearest_even, o),
              static_cast<std::uint32_t>(want))
        << numerics::name(f) << " input 0x" << std::hex << bits;
    ASSERT_EQ(bulk[i], want) << numerics::name(f) << " bulk, input 0x" << std::hex << bits;
  }
  EXPECT_GT(compared, in.size() / 2);
}

TEST_P(BlockFormatFixture, DecodeIsTheValueTheFixtureRoundsTo) {
  // Every code's value encodes back to that code in the fixture (its own value is inside
  // its run), and decode_array agrees with the scalar decode.
  const Format f = GetParam();
  const RunFixture fixture(f);
  const int patterns = 1 << numerics::layout(f).total_bits();
  std::vector<std::uint8_t> codes(patterns);
  for (int c = 0; c < patterns; ++c) codes[c] = static_cast<std::uint8_t>(c);
  std::vector<float> bulk(patterns);
  numerics::decode_array(codes.data(), codes.size(), f, bulk.data());
  for (int c = 0; c < patterns; ++c) {
    const float v = numerics::decode(static_cast<std::uint32_t>(c), numerics::layout(f));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(bulk[c]), std::bit_cast<std::uint32_t>(v));
    if (std::isnan(v)) continue;
    EXPECT_EQ(fixture.code(std::bit_cast<std::uint32_t>(v)), c) << numerics::name(f) << " " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, BlockFormatFixture,
                         ::testing::Values(Format::float4_e2m1, Format::float6_e2m3,
                                           Format::float6_e3m2, Format::float8_e8m0),
                         [](const auto& info) { return std::string(numerics::name(info.param)); });

TEST(E8M0, TheOnlyDisagreementWithMlDtypesIsItsSubnormalRounding) {
  const RunFixture fixture(Format::float8_e8m0);
  EXPECT_EQ(fixture.code(0x00400001u), 1);
  EXPECT_EQ(fixture.code(0x005fffffu), 1);
  const numerics::Layout& l = numerics::layout(Format::float8_e8m0);
  for (std::uint32_t bits : {0x00400001u, 0x00500000u, 0x005fffffu}) {
    const float x = std::bit_cast<float>(bits);
    EXPECT_EQ(ref_encode_e8m0(x, false, false, false, 0), 0u);
    EXPECT_EQ(numerics::encode(x, l, Rounding::nearest_even, Overflow::to_infinity), 0u);
  }
  // From the midpoint up both agree: field 1.
  EXPECT_EQ(fixture.code(0x00600000u), 1);
  EXPECT_EQ(numerics::encode(std::bit_cast<float>(0x00600000u), l, Rounding::nearest_even,
                             Overflow::to_infinity),
            1u);
}

TEST(E8M0, DecodeEveryPatternByHand) {
  for (std::uint32_t field = 0; field < 255; ++field) {
    EXPECT_EQ(static_cast<double>(numerics::decode(field, numerics::layout(Format::float8_e8m0))),
              std::ldexp(1.0, static_cast<int>(field) - 127));
  }
  EXPECT_TRUE(std::isnan(numerics::decode(0xffu, numerics::layout(Format::float8_e8m0))));
}

TEST(E8M0, BulkDecodeOfEveryPatternByHandOnEveryPath) {
  // Every field twice over, from odd offsets (vector groups and the scalar tail).
  std::vector<std::uint8_t> fields(515);
  for (std::size_t i = 0; i < fields.size(); ++i) fields[i] = static_cast<std::uint8_t>(i * 7);
  testing::on_each_simd_path(testing::kEverySimdPath, [&](const std::string& path) {
    for (const std::size_t from : {std::size_t{0}, std::size_t{3}}) {
      std::vector<float> got(fields.size() - from + 1, -1.0f);
      numerics::decode_array(fields.data() + from, fields.size() - from, Format::float8_e8m0,
                             got.data());
      for (std::size_t i = 0; i + from < fields.size(); ++i) {
        const int field = fields[i + from];
        if (field == 0xff) {
          ASSERT_TRUE(std::isnan(got[i])) << path;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), 0x7fc00000u) << path;
        } else {
          ASSERT_EQ(static_cast<double>(got[i]), std::ldexp(1.0, field - 127))
              << path << " field " << field;
        }
      }
      ASSERT_EQ(got.back(), -1.0f) << path;  // nothing written past the end
    }
  });
}

TEST(E8M0, HandDerivedEncodings) {
  const numerics::Layout& l = numerics::layout(Format::float8_e8m0);
  const auto rne = [&](float x) {
    return numerics::encode(x, l, Rounding::nearest_even, Overflow::to_infinity);
  };
  EXPECT_EQ(rne(1.0f), 127u);
  EXPECT_EQ(rne(1.4999999f), 127u);
  EXPECT_EQ(rne(1.5f), 128u);  // the midpoint rounds up: no mantissa, no even neighbour
  EXPECT_EQ(rne(0.75f), 127u);
  EXPECT_EQ(rne(std::ldexp(1.0f, -127)), 0u);
  EXPECT_EQ(rne(std::ldexp(1.0f, -140)), 0u);  // no zero: the smallest scale
  EXPECT_EQ(rne(std::ldexp(1.5f, -127)), 1u);
  EXPECT_EQ(rne(std::ldexp(1.0f, 127)), 254u);
  EXPECT_EQ(rne(std::ldexp(1.5f, 127)), 255u);  // past 2^127: NaN
  EXPECT_EQ(numerics::encode(std::ldexp(1.5f, 127), l, Rounding::nearest_even, Overflow::saturate),
            254u);
  EXPECT_EQ(rne(0.0f), 255u);
  EXPECT_EQ(rne(-2.0f), 255u);
  EXPECT_EQ(rne(std::numeric_limits<float>::quiet_NaN()), 255u);
  EXPECT_EQ(numerics::encode(3.9f, l, Rounding::toward_zero, Overflow::to_infinity), 128u);
}

TEST(E8M0, EveryModeMatchesTheExactReference) {
  const numerics::Layout& l = numerics::layout(Format::float8_e8m0);
  std::vector<float> in;
  for (int e = -150; e <= 128; ++e) {
    for (double m : {1.0, 1.25, 1.5, 1.75}) {
      const float x = static_cast<float>(std::ldexp(m, e));
      for (std::uint32_t d = 0; d < 3; ++d) {
        in.push_back(std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) + d - 1u));
      }
    }
  }
  std::mt19937 rng(8);
  for (int i = 0; i < (1 << 16); ++i)
    in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  in.push_back(std::numeric_limits<float>::infinity());
  in.push_back(-std::numeric_limits<float>::infinity());
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
    for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
      numerics::ConvertOptions opt;
      opt.rounding = r;
      opt.overflow = o;
      opt.seed = 5;
      opt.counter = 77;
      std::vector<std::uint32_t> want(in.size());
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint32_t random = numerics::stochastic_bits(opt.seed, opt.counter + i);
        want[i] = ref_encode_e8m0(in[i], r == Rounding::toward_zero, r == Rounding::stochastic,
                                  o == Overflow::saturate, random);
        ASSERT_EQ(numerics::encode(in[i], l, r, o, random), want[i])
            << in[i] << " " << numerics::rounding_name(r);
      }
      // The bulk conversion on every path, from offsets 0 and 5 (the vector groups, the tail
      // and the random stream's counter shifted with them).
      testing::on_each_simd_path(testing::kEverySimdPath, [&](const std::string& path) {
        for (const std::size_t from : {std::size_t{0}, std::size_t{5}}) {
          numerics::ConvertOptions at = opt;
          at.counter += from;
          std::vector<std::uint8_t> bulk(in.size() - from + 1, 0xa5);
          numerics::encode_array(in.data() + from, in.size() - from, Format::float8_e8m0,
                                 bulk.data(), at);
          for (std::size_t i = 0; i + from < in.size(); ++i) {
            ASSERT_EQ(bulk[i], want[i + from])
                << in[i + from] << " " << path << " " << numerics::rounding_name(r) << " saturate "
                << (o == Overflow::saturate);
          }
          ASSERT_EQ(bulk.back(), 0xa5) << path;  // nothing written past the end
        }
        // round_to_format: the encode's value.
        std::vector<float> rounded = in;
        numerics::round_to_format(rounded.data(), rounded.size(), Format::float8_e8m0, opt);
        for (std::size_t i = 0; i < in.size(); ++i) {
          const float value = numerics::decode(want[i], l);
          ASSERT_TRUE(std::isnan(value) ? std::isnan(rounded[i]) : rounded[i] == value)
              << in[i] << " " << path << " round_to_format " << numerics::rounding_name(r);
        }
      });
    }
  }
}

TEST(Fp4Packing, EvenElementInTheLowNibble) {
  const std::uint8_t codes[5] = {0x1, 0x2, 0xf, 0x5, 0x9};
  std::uint8_t packed[3] = {0xaa, 0xaa, 0xaa};
  numerics::pack_fp4(codes, 5, packed);
  EXPECT_EQ(packed[0], 0x21);
  EXPECT_EQ(packed[1], 0x5f);
  EXPECT_EQ(packed[2], 0x09);  // odd count: the high nibble of the last byte is 0
  std::uint8_t back[5] = {};
  numerics::unpack_fp4(packed, 5, back);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], codes[i]);
  const std::uint8_t bad[2] = {0x3, 0x10};
  EXPECT_THROW(numerics::pack_fp4(bad, 2, packed), Error);
  EXPECT_EQ(numerics::fp4_packed_bytes(5), 3u);
  EXPECT_EQ(numerics::fp4_packed_bytes(4), 2u);
}

TEST(Fp4Packing, EncodeAndDecodePackedByHand) {
  // 0.5 -> 1, 1 -> 2, -6 -> f, 3 -> 5, 0.25 -> 0 (tie to even), 7 -> 7 (saturates)
  const float in[6] = {0.5f, 1.0f, -6.0f, 3.0f, 0.25f, 7.0f};
  std::uint8_t packed[3] = {};
  numerics::encode_fp4_packed(in, 6, packed);
  EXPECT_EQ(packed[0], 0x21);
  EXPECT_EQ(packed[1], 0x5f);
  EXPECT_EQ(packed[2], 0x70);
  float out[6] = {};
  numerics::decode_fp4_packed(packed, 6, out);
  const float want[6] = {0.5f, 1.0f, -6.0f, 3.0f, 0.0f, 6.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]);
}

}  // namespace
}  // namespace mantissa::testing
