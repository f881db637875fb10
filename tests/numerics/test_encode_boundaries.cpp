// float32 -> format on the boundary cases, against hand-derived patterns and against the
// exact reference in every rounding mode and overflow mode.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;
using numerics::Overflow;
using numerics::Rounding;

std::uint32_t enc(Format f, float x, Rounding r = Rounding::nearest_even,
                  Overflow o = Overflow::to_infinity, std::uint32_t random = 0) {
  return numerics::encode(x, numerics::layout(f), r, o, random);
}
float from_bits(std::uint32_t u) {
  return std::bit_cast<float>(u);
}
float up(float x) {
  return std::nextafter(x, std::numeric_limits<float>::infinity());
}
float down(float x) {
  return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

TEST(EncodeHandDerived, Float16) {
  const Format f = Format::float16;
  EXPECT_EQ(enc(f, 1.0f), 0x3c00u);
  EXPECT_EQ(enc(f, -0.0f), 0x8000u);
  EXPECT_EQ(enc(f, 65504.0f), 0x7bffu);
  EXPECT_EQ(enc(f, down(65520.0f)), 0x7bffu);
  EXPECT_EQ(enc(f, 65520.0f), 0x7c00u);  // max + half ulp: tie, max is odd -> infinity
  EXPECT_EQ(enc(f, 65520.0f, Rounding::toward_zero), 0x7bffu);
  EXPECT_EQ(enc(f, 65520.0f, Rounding::nearest_even, Overflow::saturate), 0x7bffu);
  EXPECT_EQ(enc(f, -1e30f, Rounding::nearest_even, Overflow::saturate), 0xfbffu);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -24)), 0x0001u);      // min subnormal
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -25)), 0x0000u);      // half of it: tie to even zero
  EXPECT_EQ(enc(f, up(std::ldexp(1.0f, -25))), 0x0001u);  // just above the tie
  EXPECT_EQ(enc(f, 3 * std::ldexp(1.0f, -25)), 0x0002u);  // 1.5 min subnormal -> 2 (even)
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -14)), 0x0400u);      // min normal
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400u);  // tie -> normal
  EXPECT_EQ(enc(f, 1.0f + std::ldexp(1.0f, -11)), 0x3c00u);                   // tie -> even (1.0)
  EXPECT_EQ(enc(f, 1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u);  // tie -> even (1+2^-9)
  EXPECT_EQ(enc(f, std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(enc(f, from_bits(0x7fc00000u)), 0x7e00u);
  EXPECT_EQ(enc(f, from_bits(0x7f800001u)), 0x7e00u);  // signalling NaN comes out quiet
  EXPECT_EQ(enc(f, from_bits(0xffffffffu)), 0xffffu);
  EXPECT_EQ(enc(f, from_bits(0x00000001u)), 0x0000u);  // float32 subnormal -> 0
  EXPECT_EQ(enc(f, 0.1f, Rounding::toward_zero), 0x2e66u);
}

TEST(EncodeHandDerived, BFloat16) {
  const Format f = Format::bfloat16;
  EXPECT_EQ(enc(f, 1.0f), 0x3f80u);
  EXPECT_EQ(enc(f, 1.0f + std::ldexp(1.0f, -8)), 0x3f80u);
  EXPECT_EQ(enc(f, 1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82u);
  EXPECT_EQ(enc(f, std::numeric_limits<float>::max()), 0x7f80u);
  EXPECT_EQ(enc(f, std::numeric_limits<float>::max(), Rounding::toward_zero), 0x7f7fu);
  EXPECT_EQ(enc(f, from_bits(0x7f7f7fffu)), 0x7f7fu);
  EXPECT_EQ(enc(f, from_bits(0x7f7f8000u)), 0x7f80u);  // tie at max + half ulp -> inf
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -133)), 0x0001u);  // min subnormal
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -134)), 0x0000u);  // tie -> 0
  EXPECT_EQ(enc(f, std::ldexp(3.0f, -134)), 0x0002u);  // tie -> 2
  EXPECT_EQ(enc(f, from_bits(0x7f800001u)), 0x7fc0u);
  EXPECT_EQ(enc(f, from_bits(0xff812345u)), 0xffc1u);  // sign and top payload bits kept
  EXPECT_EQ(enc(f, 0.1f), 0x3dcdu);
}

TEST(EncodeHandDerived, CBFloat16) {
  const Format f = Format::cbfloat16;
  EXPECT_EQ(enc(f, 1.0f), 31u << 9);
  EXPECT_EQ(enc(f, 4290772992.0f), 0x7dffu);  // (2 - 2^-9) * 2^31, the max
  EXPECT_EQ(enc(f, 4294967296.0f), 0x7e00u);  // 2^32 -> infinity
  EXPECT_EQ(enc(f, 4292870144.0f), 0x7e00u);  // max + half ulp: tie -> infinity
  EXPECT_EQ(enc(f, down(4292870144.0f)), 0x7dffu);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -39)), 0x0001u);  // min subnormal
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -30)), 0x0200u);  // min normal
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -40)), 0x0000u);
  EXPECT_EQ(enc(f, std::numeric_limits<float>::infinity()), 0x7e00u);
  EXPECT_EQ(enc(f, from_bits(0x7fc00000u)), 0x7f00u);
}

TEST(EncodeHandDerived, Float8E4M3) {
  const Format f = Format::float8_e4m3;
  const Overflow sat = Overflow::saturate, inf = Overflow::to_infinity;
  EXPECT_EQ(enc(f, 1.0f, Rounding::nearest_even, sat), 0x38u);
  EXPECT_EQ(enc(f, 448.0f, Rounding::nearest_even, sat), 0x7eu);
  EXPECT_EQ(enc(f, 464.0f, Rounding::nearest_even, inf), 0x7eu);      // tie: 448 (110) is even
  EXPECT_EQ(enc(f, up(464.0f), Rounding::nearest_even, inf), 0x7fu);  // overflow -> NaN
  EXPECT_EQ(enc(f, up(464.0f), Rounding::nearest_even, sat), 0x7eu);
  EXPECT_EQ(enc(f, -1000.0f, Rounding::nearest_even, sat), 0xfeu);
  EXPECT_EQ(enc(f, -1000.0f, Rounding::toward_zero, inf), 0xfeu);
  EXPECT_EQ(enc(f, std::numeric_limits<float>::infinity(), Rounding::nearest_even, sat), 0x7eu);
  EXPECT_EQ(enc(f, -std::numeric_limits<float>::infinity(), Rounding::nearest_even, inf), 0xffu);
  EXPECT_EQ(enc(f, std::nanf(""), Rounding::nearest_even, sat), 0x7fu);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -9), Rounding::nearest_even, sat), 0x01u);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -10), Rounding::nearest_even, sat), 0x00u);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -6), Rounding::nearest_even, sat), 0x08u);
}

TEST(EncodeHandDerived, Float8E5M2) {
  const Format f = Format::float8_e5m2;
  EXPECT_EQ(enc(f, 1.0f), 0x3cu);
  EXPECT_EQ(enc(f, 57344.0f), 0x7bu);
  EXPECT_EQ(enc(f, down(61440.0f)), 0x7bu);
  EXPECT_EQ(enc(f, 61440.0f), 0x7cu);  // max + half ulp: tie -> infinity
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -16)), 0x01u);
  EXPECT_EQ(enc(f, std::ldexp(1.0f, -17)), 0x00u);
  EXPECT_EQ(enc(f, std::ldexp(3.0f, -17)), 0x02u);
  EXPECT_EQ(enc(f, from_bits(0x7fc00000u)), 0x7eu);
  EXPECT_EQ(enc(f, from_bits(0x7fe00000u)), 0x7fu);  // payload bit kept
}

// The boundary inputs of one format, derived from its parameters.
std::vector<float> boundary_inputs(const RefFormat& r) {
  std::vector<double> anchors;
  const double min_sub = std::ldexp(1.0, 1 - r.bias - r.mantissa_bits);
  const double min_norm = std::ldexp(1.0, 1 - r.bias);
  RefEncoder e(r);
  const int e_top = (1 << r.exponent_bits) - (r.has_infinity ? 2 : 1);
  const double top_ulp = std::ldexp(1.0, e_top - r.bias - r.mantissa_bits);
  const double max = ref_decode(
      r.has_infinity ? ((1u << r.exponent_bits) - 1u) * (1u << r.mantissa_bits) - 1u
                     : (1u << (r.exponent_bits + r.mantissa_bits)) - (r.has_nan ? 2u : 1u),
      r);
  const double eps = std::ldexp(1.0, -r.mantissa_bits);
  for (double k : {0.5, 1.0, 1.5, 2.0, 2.5, 3.0}) anchors.push_back(k * min_sub);
  anchors.push_back(min_norm - min_sub);
  anchors.push_back(min_norm - min_sub / 2);
  anchors.push_back(min_norm);
  anchors.push_back(min_norm + min_sub / 2);
  anchors.push_back(1.0);
  anchors.push_back(1.0 + eps / 2);
  anchors.push_back(1.0 + 3 * eps / 2);
  anchors.push_back(2.0 - eps / 2);
  anchors.push_back(max - top_ulp / 2);
  anchors.push_back(max);
  anchors.push_back(max + top_ulp / 2);
  anchors.push_back(max + top_ulp);
  anchors.push_back(max * 2);
  std::vector<float> out;
  for (double a : anchors) {
    const float f = static_cast<float>(a);
    for (float v : {f, up(f), down(f)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  from_bits(0x7fc00000u), from_bits(0xffc00000u), from_bits(0x7f800001u),
                  from_bits(0x7fbfffffu), from_bits(0x7fffffffu), from_bits(0xff812345u)}) {
    out.push_back(v);
  }
  return out;
}

class EncodeBoundaries : public ::testing::TestWithParam<FormatCase> {};

TEST_P(EncodeBoundaries, MatchExactReferenceInEveryMode) {
  const FormatCase& c = GetParam();
  const RefEncoder reference(c.ref);
  const numerics::Layout& l = numerics::layout(c.format);
  const std::vector<float> inputs = boundary_inputs(c.ref);
  ASSERT_GT(inputs.size(), 100u);
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
    for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
      for (std::uint32_t random : {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x9e3779b9u}) {
        for (float x : inputs) {
          const std::uint32_t want =
              reference.encode(x, to_ref(r), o == Overflow::saturate, random);
          const std::uint32_t got = numerics::encode(x, l, r, o, random);
          ASSERT_EQ(got, want) << case_name(c.format) << " x=" << x << std::hex << " (0x"
                               << std::bit_cast<std::uint32_t>(x) << ") rounding "
                               << numerics::rounding_name(r) << " saturate "
                               << (o == Overflow::saturate) << " random 0x" << random;
          if (r != Rounding::stochastic) break;  // the random bits only matter there
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EncodeBoundaries, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

}  // namespace
}  // namespace mantissa::testing
