// Scalar value types and their std::numeric_limits, against values derived by hand from
// docs/design.md section 2; the traits table against the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mantissa/error.hpp"
#include "mantissa/numerics/scalar_types.hpp"

namespace mantissa::numerics {
namespace {

template <class T>
double as_double(T v) {
  return static_cast<double>(static_cast<float>(v));
}

TEST(NumericLimits, Float16) {
  using L = std::numeric_limits<Float16>;
  EXPECT_EQ(as_double(L::max()), 65504.0);
  EXPECT_EQ(as_double(L::lowest()), -65504.0);
  EXPECT_EQ(as_double(L::min()), std::ldexp(1.0, -14));
  EXPECT_EQ(as_double(L::denorm_min()), std::ldexp(1.0, -24));
  EXPECT_EQ(as_double(L::epsilon()), std::ldexp(1.0, -10));
  EXPECT_TRUE(std::isinf(as_double(L::infinity())));
  EXPECT_TRUE(std::isnan(as_double(L::quiet_NaN())));
  EXPECT_EQ(L::digits, 11);
  EXPECT_EQ(L::digits10, 3);
  EXPECT_EQ(L::max_digits10, 5);
  EXPECT_EQ(L::min_exponent, -13);
  EXPECT_EQ(L::max_exponent, 16);
  EXPECT_TRUE(L::is_iec559);
}

TEST(NumericLimits, BFloat16AndCBFloat16) {
  using B = std::numeric_limits<BFloat16>;
  EXPECT_EQ(as_double(B::max()), (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  EXPECT_EQ(as_double(B::min()), std::ldexp(1.0, -126));
  EXPECT_EQ(as_double(B::denorm_min()), std::ldexp(1.0, -133));
  EXPECT_EQ(as_double(B::epsilon()), std::ldexp(1.0, -7));
  EXPECT_EQ(B::digits, 8);
  EXPECT_EQ(B::max_exponent, 128);
  using C = std::numeric_limits<CBFloat16>;
  EXPECT_EQ(as_double(C::max()), (2.0 - std::ldexp(1.0, -9)) * std::ldexp(1.0, 31));
  EXPECT_EQ(as_double(C::min()), std::ldexp(1.0, -30));
  EXPECT_EQ(as_double(C::denorm_min()), std::ldexp(1.0, -39));
  EXPECT_EQ(as_double(C::epsilon()), std::ldexp(1.0, -9));
  EXPECT_TRUE(C::has_infinity);
  EXPECT_EQ(C::digits, 10);
}

TEST(NumericLimits, Float8) {
  using E4 = std::numeric_limits<Float8E4M3>;
  EXPECT_EQ(as_double(E4::max()), 448.0);
  EXPECT_EQ(as_double(E4::min()), std::ldexp(1.0, -6));
  EXPECT_EQ(as_double(E4::denorm_min()), std::ldexp(1.0, -9));
  EXPECT_EQ(as_double(E4::epsilon()), 0.125);
  EXPECT_FALSE(E4::has_infinity);
  EXPECT_TRUE(std::isnan(as_double(E4::quiet_NaN())));
  EXPECT_EQ(E4::quiet_NaN().bits(), 0x7f);
  EXPECT_EQ(E4::max_exponent, 9);
  using E5 = std::numeric_limits<Float8E5M2>;
  EXPECT_EQ(as_double(E5::max()), 57344.0);
  EXPECT_EQ(as_double(E5::denorm_min()), std::ldexp(1.0, -16));
  EXPECT_EQ(as_double(E5::epsilon()), 0.25);
  EXPECT_TRUE(E5::has_infinity);
}

TEST(NumericLimits, MicroscalingFormats) {
  using F4 = std::numeric_limits<Float4E2M1>;
  EXPECT_EQ(as_double(F4::max()), 6.0);
  EXPECT_EQ(as_double(F4::lowest()), -6.0);
  EXPECT_EQ(as_double(F4::min()), 1.0);
  EXPECT_EQ(as_double(F4::denorm_min()), 0.5);
  EXPECT_EQ(as_double(F4::epsilon()), 0.5);
  EXPECT_FALSE(F4::has_infinity);
  EXPECT_FALSE(F4::has_quiet_NaN);
  EXPECT_EQ(F4::max_exponent, 3);  // 6 = 1.5 * 2^2 < 2^3
  EXPECT_EQ(F4::min_exponent, 1);
  using E2 = std::numeric_limits<Float6E2M3>;
  EXPECT_EQ(as_double(E2::max()), 7.5);
  EXPECT_EQ(as_double(E2::denorm_min()), 0.125);
  using E3 = std::numeric_limits<Float6E3M2>;
  EXPECT_EQ(as_double(E3::max()), 28.0);
  EXPECT_EQ(as_double(E3::min()), 0.25);
  EXPECT_EQ(as_double(E3::denorm_min()), 0.0625);
  EXPECT_EQ(E3::max_exponent, 5);
  using S = std::numeric_limits<Float8E8M0>;
  EXPECT_FALSE(S::is_signed);
  EXPECT_EQ(as_double(S::max()), std::ldexp(1.0, 127));
  EXPECT_EQ(as_double(S::min()), std::ldexp(1.0, -127));
  EXPECT_EQ(as_double(S::lowest()), std::ldexp(1.0, -127));
  EXPECT_EQ(as_double(S::denorm_min()), std::ldexp(1.0, -127));
  EXPECT_EQ(as_double(S::epsilon()), 1.0);
  EXPECT_TRUE(std::isnan(as_double(S::quiet_NaN())));
  EXPECT_EQ(S::quiet_NaN().bits(), 0xff);
  EXPECT_EQ(S::min_exponent, -126);
  EXPECT_EQ(S::max_exponent, 128);
}

TEST(ScalarTypes, ExplicitNamedConversions) {
  const Float16 h = Float16::from_float(0.1f);
  EXPECT_EQ(h.bits(), 0x2e66);
  EXPECT_EQ(h.to_float(), 0.0999755859375f);
  EXPECT_EQ(Float16::from_float(0.1f, Rounding::toward_zero).bits(), 0x2e66);
  EXPECT_EQ(BFloat16(0.1f).bits(), 0x3dcd);
  EXPECT_EQ(BFloat16::from_float(0.1f, Rounding::toward_zero).bits(), 0x3dcc);
  EXPECT_EQ(Float8E4M3::from_float(1e6f).bits(), 0x7e);  // saturates by default
  EXPECT_EQ(Float8E4M3::from_float(1e6f, Rounding::nearest_even, Overflow::to_infinity).bits(),
            0x7f);
  EXPECT_EQ(Float8E5M2::from_float(1e6f).bits(), 0x7c);  // infinity by default
  EXPECT_EQ(static_cast<float>(CBFloat16::from_bits(0x3e00)), 1.0f);
  // Not implicitly convertible either way.
  static_assert(!std::is_convertible_v<float, Float16>);
  static_assert(!std::is_convertible_v<Float16, float>);
  static_assert(sizeof(Float16) == 2 && sizeof(Float8E4M3) == 1);
}

TEST(FormatTable, MatchesDesignTable) {
  struct Row {
    Format f;
    int e, m, bias;
    double max, min_normal, min_sub;
  };
  const Row rows[] = {
      {Format::float32, 8, 23, 127, 3.4028234663852886e38, std::ldexp(1.0, -126),
       std::ldexp(1.0, -149)},
      {Format::float16, 5, 10, 15, 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -24)},
      {Format::bfloat16, 8, 7, 127, 3.3895313892515355e38, std::ldexp(1.0, -126),
       std::ldexp(1.0, -133)},
      {Format::cbfloat16, 6, 9, 31, 4290772992.0, std::ldexp(1.0, -30), std::ldexp(1.0, -39)},
      {Format::float8_e4m3, 4, 3, 7, 448.0, std::ldexp(1.0, -6), std::ldexp(1.0, -9)},
      {Format::float8_e5m2, 5, 2, 15, 57344.0, std::ldexp(1.0, -14), std::ldexp(1.0, -16)},
      // OCP MX v1.0 tables: fp6 e2m3 max 1.875 * 2^2, e3m2 max 1.75 * 2^4, fp4 max 1.5 * 2^2.
      {Format::float6_e2m3, 2, 3, 1, 7.5, 1.0, 0.125},
      {Format::float6_e3m2, 3, 2, 3, 28.0, 0.25, 0.0625},
      {Format::float4_e2m1, 2, 1, 1, 6.0, 1.0, 0.5},
      {Format::float8_e8m0, 8, 0, 127, std::ldexp(1.0, 127), std::ldexp(1.0, -127),
       std::ldexp(1.0, -127)},
  };
  for (const Row& r : rows) {
    const FormatTraits& t = traits(r.f);
    EXPECT_EQ(t.format, r.f);
    EXPECT_EQ(t.layout.exponent_bits, r.e) << t.name;
    EXPECT_EQ(t.layout.mantissa_bits, r.m) << t.name;
    EXPECT_EQ(t.layout.bias, r.bias) << t.name;
    EXPECT_EQ(t.max, r.max) << t.name;
    EXPECT_EQ(t.min_normal, r.min_normal) << t.name;
    EXPECT_EQ(t.min_subnormal, r.min_sub) << t.name;
    EXPECT_EQ(t.epsilon, std::ldexp(1.0, -r.m)) << t.name;
  }
  EXPECT_EQ(std::size(rows), kFormatCount);
  EXPECT_EQ(traits(Format::float8_e4m3).default_overflow, Overflow::saturate);
  EXPECT_EQ(traits(Format::float4_e2m1).default_overflow, Overflow::saturate);
  EXPECT_EQ(traits(Format::float8_e8m0).default_overflow, Overflow::to_infinity);
  for (Format f : {Format::float6_e2m3, Format::float6_e3m2, Format::float4_e2m1}) {
    EXPECT_EQ(traits(f).use, FormatUse::block_element);
    EXPECT_EQ(traits(f).storage_bytes, 1);
  }
  EXPECT_EQ(traits(Format::float8_e8m0).use, FormatUse::block_scale);
  for (Format f : kTensorFormats) EXPECT_TRUE(is_tensor_format(f)) << name(f);
  EXPECT_EQ(traits(Format::float16).default_overflow, Overflow::to_infinity);
}

TEST(FormatTable, ParseNames) {
  for (const FormatTraits& t : kFormatTable) EXPECT_EQ(parse_format(t.name), t.format);
  EXPECT_FALSE(parse_format("fp16").has_value());
  try {
    parse_format_or_throw("fp16", "precision.fp16_type");
    FAIL() << "expected mantissa::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "precision.fp16_type: unknown format 'fp16' (expected one of: float32, "
                 "float16, bfloat16, cbfloat16, float8_e4m3, float8_e5m2, float6_e2m3, "
                 "float6_e3m2, float4_e2m1, float8_e8m0)");
  }
  EXPECT_EQ(parse_rounding("stochastic"), Rounding::stochastic);
  EXPECT_FALSE(parse_rounding("up").has_value());
}

}  // namespace
}  // namespace mantissa::numerics
