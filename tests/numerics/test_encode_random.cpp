// float32 -> format on 10^7 random float32 patterns per format and rounding mode, plus 10^7
// drawn inside each format's range, against the exact reference.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <tuple>

#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::Overflow;
using numerics::Rounding;

constexpr int kSamples = 10'000'000;

class EncodeRandom : public ::testing::TestWithParam<FormatRounding> {};

void check(const FormatCase& c, Rounding r, bool in_range) {
  const RefEncoder reference(c.ref);
  const numerics::Layout& l = numerics::layout(c.format);
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(c.format) * 16 +
                      static_cast<unsigned>(r) * 4 + (in_range ? 1 : 0));
  // In range: exponents from just below the smallest subnormal to just above the max.
  const int lo_exp = 127 - c.ref.bias - c.ref.mantissa_bits - 2;
  const int hi_exp = 127 + (1 << c.ref.exponent_bits) - c.ref.bias + 1;
  std::uniform_int_distribution<int> exp_dist(std::max(lo_exp, 0), std::min(hi_exp, 255));
  std::uint64_t mismatches = 0;
  for (int i = 0; i < kSamples; ++i) {
    const std::uint64_t w = rng();
    std::uint32_t u = static_cast<std::uint32_t>(w);
    if (in_range) {
      u = (u & 0x807fffffu) | (static_cast<std::uint32_t>(exp_dist(rng)) << 23);
    }
    const std::uint32_t random = static_cast<std::uint32_t>(w >> 32);
    const Overflow o = (w >> 31) & 1 ? Overflow::saturate : Overflow::to_infinity;
    const float x = std::bit_cast<float>(u);
    const std::uint32_t want = reference.encode(x, to_ref(r), o == Overflow::saturate, random);
    const std::uint32_t got = numerics::encode(x, l, r, o, random);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << case_name(c.format) << " " << numerics::rounding_name(r) << std::hex
                    << " input 0x" << u << " random 0x" << random << " got 0x" << got << " want 0x"
                    << want;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(EncodeRandom, UniformBitPatterns) {
  check(std::get<0>(GetParam()), std::get<1>(GetParam()), false);
}

TEST_P(EncodeRandom, PatternsInsideTheFormatsRange) {
  check(std::get<0>(GetParam()), std::get<1>(GetParam()), true);
}

INSTANTIATE_TEST_SUITE_P(Formats, EncodeRandom, all_formats_and_roundings(), format_rounding_name);

}  // namespace
}  // namespace mantissa::testing
