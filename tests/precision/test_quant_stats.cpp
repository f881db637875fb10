// QuantStats on hand-built roundings: the rounded values are written by hand from the formats'
// definitions (docs/design.md's table), and the expected counts and SNR are derived here in
// long double, independently of the code.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/precision/quant_probe.hpp"
#include "mantissa/precision/quant_stats.hpp"

namespace mantissa::precision {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

long double db(long double signal, long double noise) {
  return 10.0L * std::log10(signal / noise);
}

TEST(QuantStats, RoundingToBfloat16ByHand) {
  const float p9 = std::ldexp(1.0f, -9);
  // bfloat16: 8 significant bits, min normal 2^-126, min subnormal 2^-133, max (2 - 2^-7) 2^127.
  const std::vector<float> x = {1.0f,
                                1.0f + p9,  // below half an ulp (2^-8) above 1: to 1
                                3.0f,
                                0.0f,
                                std::ldexp(1.0f, -130),  // a bfloat16 subnormal, exact
                                std::ldexp(1.0f, -140),  // below half the smallest: to 0
                                3.4e38f,                 // past max + half an ulp: to inf
                                kInf,                    // already infinite
                                -2.0f};
  const std::vector<float> q = {1.0f, 1.0f, 3.0f, 0.0f, std::ldexp(1.0f, -130),
                                0.0f, kInf, kInf, -2.0f};
  QuantStats s(Format::bfloat16);
  s.add(x.data(), q.data(), static_cast<std::int64_t>(x.size()));
  const QuantCounts& c = s.counts();
  EXPECT_EQ(c.elements, 9);
  EXPECT_EQ(c.flushed, 1);    // 2^-140
  EXPECT_EQ(c.subnormal, 1);  // 2^-130
  EXPECT_EQ(c.saturated, 0);
  EXPECT_EQ(c.overflowed, 1);  // 3.4e38
  EXPECT_EQ(c.nonfinite, 1);   // inf
  // Over the 7 elements with x and q finite.
  const long double e9 = std::ldexp(1.0L, -9), e130 = std::ldexp(1.0L, -130),
                    e140 = std::ldexp(1.0L, -140);
  const long double signal = 1 + (1 + e9) * (1 + e9) + 9 + e130 * e130 + e140 * e140 + 4;
  const long double noise = e9 * e9 + e140 * e140;
  EXPECT_DOUBLE_EQ(s.signal(), static_cast<double>(signal));
  EXPECT_DOUBLE_EQ(s.noise(), static_cast<double>(noise));
  ASSERT_TRUE(s.snr_db().has_value());
  EXPECT_NEAR(*s.snr_db(), static_cast<double>(db(signal, noise)), 1e-9);
  EXPECT_FALSE(s.scale_range().has_value());
}

TEST(QuantStats, Float8E4m3SaturatesAndFlushes) {
  // e4m3 (OCP fn): max 448, min subnormal 2^-9; nearest-even sends 2^-10 (half of it) to 0.
  // The fp8 casts saturate: 500 and -1000 become +-448.
  const std::vector<float> x = {500.0f, -1000.0f, 1.0f, std::ldexp(1.0f, -10), 448.0f};
  const std::vector<float> q = {448.0f, -448.0f, 1.0f, 0.0f, 448.0f};
  QuantStats s(Format::float8_e4m3);
  s.add(x.data(), q.data(), 5);
  s.note_scale(1.0);
  EXPECT_EQ(s.counts().saturated, 2);  // 448 itself is not saturated: it is in range
  EXPECT_EQ(s.counts().flushed, 1);
  EXPECT_EQ(s.counts().subnormal, 0);
  EXPECT_EQ(s.counts().overflowed, 0);
  const long double noise = 52.0L * 52 + 552.0L * 552 + std::ldexp(1.0L, -20);
  const long double signal = 250000.0L + 1000000 + 1 + std::ldexp(1.0L, -20) + 448.0L * 448;
  EXPECT_DOUBLE_EQ(s.noise(), static_cast<double>(noise));
  EXPECT_NEAR(*s.snr_db(), static_cast<double>(db(signal, noise)), 1e-9);
  ASSERT_TRUE(s.scale_range().has_value());
  EXPECT_EQ(s.scale_range()->min, 1.0);
  EXPECT_EQ(s.scale_range()->max, 1.0);
}

TEST(QuantStats, AScaleMeasuresTheErrorInTheUnscaledValues) {
  // x * 4 = 2 and 12, both e4m3 values: nothing lost.
  QuantStats exact(Format::float8_e4m3);
  const float x1[] = {0.5f, 3.0f}, q1[] = {2.0f, 12.0f};
  exact.add(x1, q1, 2, 4.0);
  EXPECT_FALSE(exact.snr_db().has_value());
  EXPECT_EQ(exact.noise(), 0.0);
  // 0.3f * 2 lies between the e4m3 values 0.5625 and 0.625 (eighths of 2^-1), nearer 0.625:
  // the error in x's units is (0.6 - 0.625) / 2.
  QuantStats s(Format::float8_e4m3);
  const float x2[] = {0.3f}, q2[] = {0.625f};
  s.add(x2, q2, 1, 2.0);
  const long double xs = static_cast<long double>(0.3f);
  const long double err = (xs * 2 - 0.625L) / 2;
  EXPECT_DOUBLE_EQ(s.noise(), static_cast<double>(err * err));
  EXPECT_DOUBLE_EQ(s.signal(), static_cast<double>(xs * xs));
  // A value made subnormal: 2^-8 * 2 = 2^-7, below e4m3's min normal 2^-6.
  QuantStats sub(Format::float8_e4m3);
  const float x3[] = {std::ldexp(1.0f, -8)}, q3[] = {std::ldexp(1.0f, -7)};
  sub.add(x3, q3, 1, 2.0);
  EXPECT_EQ(sub.counts().subnormal, 1);
  EXPECT_FALSE(sub.snr_db().has_value());
}

TEST(QuantStats, BlockScalesDecodeTheElements) {
  // float4_e2m1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6; min normal 1, max 6), a 3 x 2 matrix whose
  // rows are tiles with decode scales 2, 64 and 1:
  //   1.5 / 2 = 0.75, a tie between 0.5 and 1: to 1 (even), standing for 2;  3 / 2 = 1.5
  //   exact;  0.01 / 64 flushes to 0;  100 / 64 = 1.5625: to 1.5, standing for 96;
  //   500 saturates at 6;  -0.7: to -0.5, a subnormal.
  const std::vector<float> x = {1.5f, 3.0f, 0.01f, 100.0f, 500.0f, -0.7f};
  const std::vector<float> q = {1.0f, 1.5f, 0.0f, 1.5f, 6.0f, -0.5f};
  const float row_scale[] = {2.0f, 64.0f, 1.0f};
  const std::vector<float> tile_scale = {2, 2, 64, 64, 1, 1};
  QuantStats s(Format::float4_e2m1);
  s.add_elements(x.data(), q.data(), 6, tile_scale.data());
  EXPECT_EQ(s.counts().elements, 6);
  EXPECT_EQ(s.counts().flushed, 1);
  EXPECT_EQ(s.counts().subnormal, 1);
  EXPECT_EQ(s.counts().saturated, 1);
  EXPECT_EQ(s.counts().overflowed, 0);
  const long double f01 = 0.01f, f07 = 0.7f;
  const long double noise = 0.25L + f01 * f01 + 16 + 494.0L * 494 + (f07 - 0.5L) * (f07 - 0.5L);
  const long double signal = 2.25L + 9 + f01 * f01 + 10000 + 250000 + f07 * f07;
  EXPECT_DOUBLE_EQ(s.noise(), static_cast<double>(noise));
  EXPECT_DOUBLE_EQ(s.signal(), static_cast<double>(signal));
  EXPECT_EQ(s.scale_range()->min, 1.0);
  EXPECT_EQ(s.scale_range()->max, 64.0);
  // A tensor scale (NVFP4's): 3 = 6 (e2m1's max, element 6 with tile scale 1) x 0.5, exact and
  // not saturated (3 is not past 6 x 0.5).
  QuantStats nv(Format::float4_e2m1);
  const float three = 3.0f, six = 6.0f, one = 1.0f;
  nv.add_elements(&three, &six, 1, &one, 0.5);
  EXPECT_FALSE(nv.snr_db().has_value());
  EXPECT_EQ(nv.counts().saturated, 0);
  EXPECT_EQ(nv.scale_range()->min, 0.5);
  // The one-line probe call records it on a sampled step only.
  const auto scale_at = [&](std::int64_t r, std::int64_t) { return row_scale[r]; };
  QuantProbe probe;
  probe_elements(QuantRole::input, "linear", Format::float4_e2m1, x.data(), q.data(), 3, 2,
                 scale_at);
  {
    const ProbeScope on(&probe);
    const LayerScope layer(std::make_shared<const std::string>("blocks.1.fc"));
    probe_elements(QuantRole::input, "linear", Format::float4_e2m1, x.data(), q.data(), 3, 2,
                   scale_at);
  }
  const auto e = probe.entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].layer, "blocks.1.fc");
  EXPECT_EQ(e[0].stats.counts(), s.counts());
  EXPECT_EQ(e[0].stats.noise(), s.noise());
  EXPECT_EQ(e[0].stats.scale_range()->max, 64.0);
}

TEST(QuantStats, MergingIsAddingAndKeepsTheScaleRange) {
  const float x[] = {1.0f, 1.00390625f, 7.0f, 0.1f};
  const float q[] = {1.0f, 1.0f, 7.0f, 0.10009765625f};  // 0.1 in bfloat16
  QuantStats all(Format::bfloat16), a(Format::bfloat16), b(Format::bfloat16);
  all.add(x, q, 4);
  a.add(x, q, 1);
  a.note_scale(2.0);
  b.add(x + 1, q + 1, 3);
  b.note_scale(0.5);
  a.merge(b);
  EXPECT_EQ(a.counts(), all.counts());
  EXPECT_EQ(a.signal(), all.signal());  // exact sums: the same bits in any grouping
  EXPECT_EQ(a.noise(), all.noise());
  EXPECT_EQ(a.scale_range()->min, 0.5);
  EXPECT_EQ(a.scale_range()->max, 2.0);
  EXPECT_THROW(a.merge(QuantStats(Format::float16)), Error);
}

TEST(QuantProbe, MergesBySiteInFirstRecordedOrder) {
  const LayerName fc = std::make_shared<const std::string>("blocks.0.fc");
  const float x[] = {1.0f}, q[] = {1.0f};
  QuantStats one(Format::bfloat16);
  one.add(x, q, 1);
  QuantProbe probe;
  probe.record({fc, "linear", QuantRole::weight}, one);
  probe.record({nullptr, "add", QuantRole::grad}, one);
  probe.record({fc, "linear", QuantRole::weight}, one);
  probe.record({fc, "linear", QuantRole::output}, one);
  const std::vector<QuantProbe::Entry> e = probe.entries();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].layer, "blocks.0.fc");
  EXPECT_EQ(e[0].role, QuantRole::weight);
  EXPECT_EQ(e[0].stats.counts().elements, 2);
  EXPECT_EQ(e[1].layer, "");
  EXPECT_EQ(e[1].op, "add");
  EXPECT_EQ(e[2].role, QuantRole::output);
}

TEST(QuantProbe, ScopesNestAndRestore) {
  EXPECT_EQ(active_probe(), nullptr);
  QuantProbe p;
  {
    const ProbeScope on(&p);
    EXPECT_EQ(active_probe(), &p);
    {
      const ProbeScope off(nullptr);
      EXPECT_EQ(active_probe(), nullptr);
    }
    EXPECT_EQ(active_probe(), &p);
  }
  EXPECT_EQ(active_probe(), nullptr);
  const LayerName outer = std::make_shared<const std::string>("blocks.1");
  const LayerName inner = std::make_shared<const std::string>("blocks.1.fc");
  {
    const LayerScope a(outer);
    {
      const LayerScope b(inner);
      EXPECT_EQ(*current_layer(), "blocks.1.fc");
      const LayerScope unnamed(nullptr);  // keeps the enclosing layer
      EXPECT_EQ(*current_layer(), "blocks.1.fc");
    }
    EXPECT_EQ(*current_layer(), "blocks.1");
  }
  EXPECT_EQ(current_layer(), nullptr);
}

}  // namespace
}  // namespace mantissa::precision
