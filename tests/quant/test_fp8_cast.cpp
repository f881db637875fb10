// The fp8 cast (quant/fp8_cast.hpp): against its scalar twin byte for byte on every source
// format, and its statistics on hand-derived inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/quant/fp8_cast.hpp"
#include "simd_paths.hpp"

namespace mantissa::quant {
namespace {

using numerics::Format;

TEST(Fp8Cast, MatchesTheScalarTwinOnEverySourceFormat) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 30.0f);
  std::vector<float> x(100'003);
  for (float& v : x) v = d(rng);
  x[5] = 0.0f;
  x[6] = -0.0f;
  x[7] = INFINITY;
  x[8] = 1e-9f;
  x[9] = 1e6f;
  for (Format src : {Format::float32, Format::bfloat16, Format::float16}) {
    std::vector<std::uint8_t> stored(x.size() * numerics::traits(src).storage_bytes);
    numerics::encode_array(x.data(), x.size(), src, stored.data());
    for (Format fp8 : {Format::float8_e4m3, Format::float8_e5m2}) {
      for (float scale : {1.0f, 3.7f, 0.01f}) {
        std::vector<std::uint8_t> fast(x.size()), ref(x.size());
        const auto n = static_cast<std::int64_t>(x.size());
        const Fp8CastStats a = cast_to_fp8(stored.data(), src, n, scale, fp8, fast.data());
        const Fp8CastStats b = cast_to_fp8_ref(stored.data(), src, n, scale, fp8, ref.data());
        ASSERT_EQ(fast, ref) << numerics::name(src) << " -> " << numerics::name(fp8);
        EXPECT_EQ(a.amax, b.amax);
        EXPECT_EQ(a.overflows, b.overflows);
        EXPECT_EQ(a.underflows, b.underflows);
        // A NaN among the values: amax is NaN; NaN is neither an overflow nor an underflow.
        std::vector<std::uint8_t> with_nan = stored;
        const std::vector<float> nan = {NAN};
        numerics::encode_array(nan.data(), 1, src,
                               with_nan.data() + 1000 * numerics::traits(src).storage_bytes);
        const Fp8CastStats c = cast_to_fp8(with_nan.data(), src, n, scale, fp8, fast.data());
        const Fp8CastStats e = cast_to_fp8_ref(with_nan.data(), src, n, scale, fp8, ref.data());
        ASSERT_EQ(fast, ref);
        EXPECT_TRUE(std::isnan(c.amax) && std::isnan(e.amax));
        EXPECT_EQ(c.overflows, e.overflows);
        EXPECT_EQ(c.underflows, e.underflows);
      }
    }
  }
}

TEST(Fp8Cast, EveryValueItsMidpointsAndTheirNeighboursMatchTheTwinOnEveryPath) {
  // For each fp8 format: every finite value, the midpoints between neighbours (the ties),
  // one float32 ulp either side of each, half the smallest subnormal, the saturation edge and
  // beyond, both signs, in float32 and bfloat16 storage; on each bulk path this CPU has.
  for (Format fp8 : {Format::float8_e4m3, Format::float8_e5m2}) {
    std::vector<float> values;
    for (std::uint32_t c = 0; c < 128; ++c) {
      float v = 0;
      numerics::decode_array_ref(&c, 1, fp8, &v);  // little-endian: the low byte is the code
      if (std::isfinite(v)) values.push_back(v);
    }
    std::vector<float> x;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float next = i + 1 < values.size() ? values[i + 1] : values[i] * 1.125f;
      for (float v : {values[i], (values[i] + next) / 2}) {
        for (float w : {v, std::nextafter(v, 0.0f), std::nextafter(v, INFINITY)}) {
          x.push_back(w);
          x.push_back(-w);
        }
      }
    }
    x.push_back(INFINITY);
    x.push_back(-INFINITY);
    x.push_back(1e30f);
    for (Format src : {Format::float32, Format::bfloat16}) {
      std::vector<std::uint8_t> stored(x.size() * numerics::traits(src).storage_bytes);
      numerics::encode_array_ref(x.data(), x.size(), src, stored.data());
      const auto n = static_cast<std::int64_t>(x.size());
      std::vector<std::uint8_t> ref(x.size());
      const Fp8CastStats b = cast_to_fp8_ref(stored.data(), src, n, 1.0f, fp8, ref.data());
      testing::on_each_simd_path(testing::kEverySimdPath, [&](const std::string& path) {
        std::vector<std::uint8_t> fast(x.size());
        const Fp8CastStats a = cast_to_fp8(stored.data(), src, n, 1.0f, fp8, fast.data());
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(fast[i], ref[i]) << numerics::name(src) << " -> " << numerics::name(fp8)
                                     << " of " << x[i] << " on " << path;
        }
        EXPECT_EQ(a.amax, b.amax);
        EXPECT_EQ(a.overflows, b.overflows);
        EXPECT_EQ(a.underflows, b.underflows);
      });
    }
  }
}

TEST(Fp8Cast, StatisticsOnHandDerivedValues) {
  // e4m3: max 448, smallest subnormal 2^-9 (half of it rounds to 0).
  const std::vector<float> x = {
      0.0f, 1.0f, -500.0f, 448.0f, std::ldexp(1.0f, -10), std::ldexp(1.1f, -10), -1e-5f, 2.0f};
  std::vector<std::uint8_t> out(x.size());
  const Fp8CastStats s =
      cast_to_fp8(x.data(), Format::float32, 8, 1.0f, Format::float8_e4m3, out.data());
  EXPECT_EQ(s.amax, 500.0f);
  EXPECT_EQ(s.overflows, 1);   // -500 saturates to -448
  EXPECT_EQ(s.underflows, 2);  // 2^-10 (the tie goes to even: 0) and -1e-5; not 1.1 * 2^-10
  EXPECT_EQ(out[2], 0xfe);     // -448: S.1111.110
  EXPECT_EQ(out[0], 0x00);
  // The scale applies before encoding: 2 * 224 = 448, no overflow; amax is of the source.
  const Fp8CastStats t =
      cast_to_fp8(x.data() + 7, Format::float32, 1, 224.0f, Format::float8_e4m3, out.data());
  EXPECT_EQ(t.amax, 2.0f);
  EXPECT_EQ(t.overflows, 0);
  EXPECT_EQ(out[0], 0x7e);
  const float nan = NAN;
  EXPECT_TRUE(std::isnan(
      cast_to_fp8(&nan, Format::float32, 1, 1.0f, Format::float8_e5m2, out.data()).amax));
}

}  // namespace
}  // namespace mantissa::quant
