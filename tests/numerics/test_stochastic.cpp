// Stochastic rounding: unbiased within a stated statistical bound, and reproducible from
// (seed, counter) on every path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::ConvertOptions;
using numerics::Rounding;

class Stochastic : public ::testing::TestWithParam<FormatCase> {};

// For x between neighbours lo < x < hi, each rounding is lo + (hi - lo) * Bernoulli(p) with
// p = (x - lo) / (hi - lo): the mean of N roundings has standard deviation at most
// (hi - lo) / (2 sqrt N). The test demands |mean - x| <= 6 of those (a false failure has
// probability below 2e-9 per value).
TEST_P(Stochastic, MeanOfManyRoundingsMatchesTheInput) {
  const FormatCase& c = GetParam();
  const numerics::Layout& l = numerics::layout(c.format);
  constexpr std::size_t kN = 200'000;
  std::vector<float> x(kN);
  std::vector<float> rounded(kN);
  const double one_ulp_at_one = std::ldexp(1.0, -c.ref.mantissa_bits);
  // Values inside a binade, near a tie, just above a neighbour, and in the subnormals.
  const double min_sub = std::ldexp(1.0, 1 - c.ref.bias - c.ref.mantissa_bits);
  const std::vector<double> values = {1.0 + 0.3 * one_ulp_at_one,
                                      1.0 + 0.5 * one_ulp_at_one,
                                      1.0 + 0.999 * one_ulp_at_one,
                                      -1.0 - 0.01 * one_ulp_at_one,
                                      3.0 + 0.77 * 2 * one_ulp_at_one,
                                      0.37 * min_sub,
                                      5.25 * min_sub,
                                      -0.61 * min_sub};
  std::uint64_t seed = 77;
  for (double v : values) {
    const float xf = static_cast<float>(v);
    std::fill(x.begin(), x.end(), xf);
    ConvertOptions opt;
    opt.rounding = Rounding::stochastic;
    opt.seed = seed++;
    std::copy(x.begin(), x.end(), rounded.begin());
    numerics::round_to_format(rounded.data(), kN, c.format, opt);
    double sum = 0;
    for (float r : rounded) sum += r;
    const double mean = sum / kN;
    const float lo = numerics::decode(
        numerics::encode(xf, l, Rounding::toward_zero, numerics::Overflow::to_infinity), l);
    const float hi = numerics::decode(
        numerics::encode(xf, l, Rounding::stochastic, numerics::Overflow::to_infinity, 0xffffffffu),
        l);
    ASSERT_NE(lo, hi) << "test value " << v << " is representable; pick another";
    const double bound = 6.0 * std::fabs(static_cast<double>(hi) - lo) / (2.0 * std::sqrt(kN));
    EXPECT_NEAR(mean, static_cast<double>(xf), bound) << case_name(c.format) << " x=" << xf;
    // Only the two neighbours ever appear.
    for (float r : rounded) ASSERT_TRUE(r == lo || r == hi) << r;
  }
}

TEST_P(Stochastic, SameSeedAndCounterGiveSameBitsOtherSeedsDiffer) {
  const FormatCase& c = GetParam();
  constexpr std::size_t kN = 4099;
  std::vector<float> x(kN);
  for (std::size_t i = 0; i < kN; ++i) x[i] = 1.0f + 0.001f * static_cast<float>(i % 97) / 97.0f;
  const std::size_t bytes = kN * c.storage_bytes;
  std::vector<std::uint8_t> a(bytes), b(bytes), d(bytes), tail(bytes);
  ConvertOptions opt;
  opt.rounding = Rounding::stochastic;
  opt.seed = 2024;
  opt.counter = 1000;
  numerics::encode_array(x.data(), kN, c.format, a.data(), opt);
  numerics::encode_array(x.data(), kN, c.format, b.data(), opt);
  EXPECT_EQ(a, b);
  // The scalar fallback gives the same bits.
  numerics::set_simd_path(numerics::SimdPath::scalar);
  numerics::encode_array(x.data(), kN, c.format, b.data(), opt);
  numerics::set_simd_path(numerics::best_simd_path());
  EXPECT_EQ(a, b);
  // Element i depends on counter + i only: converting the tail with counter + 100 matches.
  ConvertOptions later = opt;
  later.counter += 100;
  numerics::encode_array(x.data() + 100, kN - 100, c.format, tail.data(), later);
  EXPECT_EQ(
      std::memcmp(tail.data(), a.data() + 100 * c.storage_bytes, (kN - 100) * c.storage_bytes), 0);
  ConvertOptions other = opt;
  other.seed = 2025;
  numerics::encode_array(x.data(), kN, c.format, d.data(), other);
  EXPECT_NE(a, d);
}

INSTANTIATE_TEST_SUITE_P(Formats, Stochastic, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

TEST(StochasticBits, UniformEnoughForRounding) {
  // The top bit is set about half the time and consecutive counters are not correlated in
  // their top byte (a coarse check that the mixer is not the identity).
  constexpr int kN = 1 << 20;
  int top = 0, equal_top_bytes = 0;
  std::uint32_t prev = 0;
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t r = numerics::stochastic_bits(9, static_cast<std::uint64_t>(i));
    top += static_cast<int>(r >> 31);
    equal_top_bytes += (r >> 24) == (prev >> 24);
    prev = r;
  }
  EXPECT_NEAR(top, kN / 2, 6 * std::sqrt(kN / 4.0));
  EXPECT_NEAR(equal_top_bytes, kN / 256, 6 * std::sqrt(kN / 256.0));
}

}  // namespace
}  // namespace mantissa::testing
