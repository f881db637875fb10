// The probe's kernels against their scalar twins: measure_quantization over real roundings
// (the same bits, since the sums are exact, on any number of threads), and any_nonfinite on
// every tensor format with inf and NaN planted at known places.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/quant/quant_measure.hpp"

namespace mantissa::quant {
namespace {

using numerics::Format;

std::vector<float> wide_values(std::size_t n, std::uint64_t seed) {
  // Magnitudes from 2^-140 to 2^20 and a few specials: every rounding outcome of the formats.
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 20), sign(0, 1), special(0, 999);
  std::vector<float> v(n);
  for (float& x : v) {
    x = std::ldexp(mantissa(rng), exponent(rng)) * (sign(rng) ? -1.0f : 1.0f);
    const int s = special(rng);
    if (s == 0) x = std::numeric_limits<float>::infinity();
    if (s == 1) x = std::numeric_limits<float>::quiet_NaN();
    if (s == 2) x = 0.0f;
  }
  return v;
}

std::vector<char> encoded(const std::vector<float>& x, Format f, float scale) {
  std::vector<float> scaled(x);
  for (float& v : scaled) v *= scale;
  std::vector<char> out(x.size() * numerics::traits(f).storage_bytes);
  numerics::ConvertOptions o;
  if (f == Format::float8_e4m3 || f == Format::float8_e5m2)
    o.overflow = numerics::Overflow::saturate;
  numerics::encode_array(scaled.data(), scaled.size(), f, out.data(), o);
  return out;
}

TEST(MeasureQuantization, EqualsItsTwinBitForBit) {
  const std::vector<float> x = wide_values(100000, 3);
  for (const Format f : {Format::bfloat16, Format::float16, Format::cbfloat16, Format::float8_e4m3,
                         Format::float8_e5m2}) {
    for (const float scale : {1.0f, 3.5f}) {
      const std::vector<char> q = encoded(x, f, scale);
      const auto n = static_cast<std::int64_t>(x.size());
      const precision::QuantStats fast =
          measure_quantization(x.data(), Format::float32, q.data(), f, n, scale);
      const precision::QuantStats ref =
          measure_quantization_ref(x.data(), Format::float32, q.data(), f, n, scale);
      EXPECT_EQ(fast.counts(), ref.counts()) << numerics::name(f);
      EXPECT_EQ(fast.signal(), ref.signal()) << numerics::name(f);
      EXPECT_EQ(fast.noise(), ref.noise()) << numerics::name(f);
      EXPECT_GT(fast.counts().flushed, 0) << numerics::name(f);
      EXPECT_GT(fast.counts().subnormal, 0) << numerics::name(f);
      EXPECT_EQ(fast.counts().nonfinite, ref.counts().nonfinite);
      // One thread: the same bits again.
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      const precision::QuantStats one =
          measure_quantization(x.data(), Format::float32, q.data(), f, n, scale);
      omp_set_num_threads(threads);
      EXPECT_EQ(one.noise(), fast.noise());
    }
  }
}

TEST(MeasureQuantization, ReadsASourceInAHalfFormat) {
  // bfloat16 values rounded on to float8_e4m3: the source decoded, not taken as float32.
  const std::vector<float> x = wide_values(5000, 4);
  const std::vector<char> src = encoded(x, Format::bfloat16, 1.0f);
  std::vector<float> xb(x.size());
  numerics::decode_array(src.data(), x.size(), Format::bfloat16, xb.data());
  const std::vector<char> q = encoded(xb, Format::float8_e4m3, 1.0f);
  const auto n = static_cast<std::int64_t>(x.size());
  const precision::QuantStats a =
      measure_quantization(src.data(), Format::bfloat16, q.data(), Format::float8_e4m3, n);
  const precision::QuantStats b =
      measure_quantization_ref(xb.data(), Format::float32, q.data(), Format::float8_e4m3, n);
  EXPECT_EQ(a.counts(), b.counts());
  EXPECT_EQ(a.noise(), b.noise());
}

TEST(AnyNonfinite, FindsPlantedSpecialsInEveryFormat) {
  for (const Format f : {Format::float32, Format::bfloat16, Format::float16, Format::cbfloat16,
                         Format::float8_e4m3, Format::float8_e5m2}) {
    const std::size_t n = 70001;
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
    for (const std::size_t at : {std::size_t{0}, std::size_t{40000}, n - 1}) {
      for (const float special :
           {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        std::vector<float> w(v);
        w[at] = special;
        std::vector<char> bits(n * numerics::traits(f).storage_bytes);
        numerics::ConvertOptions o;
        o.overflow = numerics::Overflow::to_infinity;  // inf: NaN in e4m3, which has no inf
        numerics::encode_array(w.data(), n, f, bits.data(), o);
        EXPECT_TRUE(kernels::any_nonfinite(bits.data(), f, static_cast<std::int64_t>(n)))
            << numerics::name(f) << " at " << at;
        EXPECT_TRUE(kernels::any_nonfinite_ref(bits.data(), f, static_cast<std::int64_t>(n)));
      }
    }
    std::vector<char> bits(n * numerics::traits(f).storage_bytes);
    numerics::encode_array(v.data(), n, f, bits.data());
    EXPECT_FALSE(kernels::any_nonfinite(bits.data(), f, static_cast<std::int64_t>(n)))
        << numerics::name(f);
    EXPECT_FALSE(kernels::any_nonfinite_ref(bits.data(), f, static_cast<std::int64_t>(n)));
  }
  // A format without inf or NaN never holds one.
  const std::vector<std::uint8_t> fp4(64, 0x0F);
  EXPECT_FALSE(kernels::any_nonfinite(fp4.data(), Format::float4_e2m1, 64));
  EXPECT_FALSE(kernels::any_nonfinite_ref(fp4.data(), Format::float4_e2m1, 64));
}

}  // namespace
}  // namespace mantissa::quant
