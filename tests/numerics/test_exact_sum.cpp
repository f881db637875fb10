// ExactSum against sums whose exact values are known: integers scaled by powers of two added
// in __int128, cancellations, subnormals, the ends of double's range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/numerics/exact_sum.hpp"

namespace mantissa::numerics {
namespace {

TEST(ExactSum, CancellationLeavesTheSmallTerm) {
  ExactSum s;
  s.add(std::ldexp(1.0, 100));
  s.add(1.0);
  s.add(-std::ldexp(1.0, 100));
  EXPECT_EQ(s.value(), 1.0);  // a double sum gives 0
}

TEST(ExactSum, TenTimesPointOneIsOneRoundedOnce) {
  // fl(0.1) = 0.1000000000000000055511151231257827...; ten of them are
  // 1.000000000000000055511151231257827..., which rounds to 1. Added in double: 0.9999999999999999.
  ExactSum s;
  double naive = 0;
  for (int i = 0; i < 10; ++i) {
    s.add(0.1);
    naive += 0.1;
  }
  EXPECT_EQ(s.value(), 1.0);
  EXPECT_NE(naive, 1.0);
}

TEST(ExactSum, SubnormalsAddExactly) {
  const double tiny = std::numeric_limits<double>::denorm_min();  // 2^-1074
  ExactSum s;
  for (int i = 0; i < 3; ++i) s.add(tiny);
  EXPECT_EQ(s.value(), 3 * tiny);
  s.add(-3 * tiny);
  EXPECT_TRUE(s.is_zero());
  EXPECT_EQ(s.value(), 0.0);
}

TEST(ExactSum, PastDoublesRangeIsInfinite) {
  ExactSum s;
  s.add(std::numeric_limits<double>::max());
  s.add(std::numeric_limits<double>::max());
  EXPECT_EQ(s.value(), std::numeric_limits<double>::infinity());
  s.add(-std::numeric_limits<double>::max());
  EXPECT_EQ(s.value(), std::numeric_limits<double>::max());  // the exact sum came back
}

TEST(ExactSum, InfinitiesAndNaNsFollowIeee) {
  ExactSum s;
  s.add(1.0);
  s.add(std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.value(), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(s.is_zero());
  s.add(-std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(s.value()));
}

TEST(ExactSum, NegativeSums) {
  ExactSum s;
  s.add(-2.5);
  s.add(std::ldexp(1.0, -60));
  // -2.5 + 2^-60 is not a double: the nearest is -2.5 (within 2 ulp by the contract; here
  // exactly, the rest being far below half an ulp).
  EXPECT_EQ(s.value(), -2.5);
  ExactSum t;
  t.add(-std::ldexp(1.0, 80));
  t.add(std::ldexp(3.0, 20));
  EXPECT_EQ(t.value(), -std::ldexp(1.0, 80) + std::ldexp(3.0, 20));  // exact in double
}

// Values k * 2^e with |k| < 2^20 and e in [-40, 40]: their exact sum, times 2^40, is an integer
// of at most 101 bits, which __int128 adds exactly and converts to double correctly rounded.
TEST(ExactSum, AgreesWithIntegerArithmeticInAnyOrder) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> mantissa(-(1 << 20) + 1, (1 << 20) - 1), exponent(-40, 40);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> v;
    __int128 exact = 0;
    for (int i = 0; i < 2000; ++i) {
      const int k = mantissa(rng), e = exponent(rng);
      v.push_back(std::ldexp(static_cast<double>(k), e));
      exact += static_cast<__int128>(k) << (e + 40);
    }
    const double want = std::ldexp(static_cast<double>(exact), -40);
    ExactSum forward, backward, halves, other;
    for (double x : v) forward.add(x);
    for (auto it = v.rbegin(); it != v.rend(); ++it) backward.add(*it);
    for (std::size_t i = 0; i < v.size() / 2; ++i) halves.add(v[i]);
    for (std::size_t i = v.size() / 2; i < v.size(); ++i) other.add(v[i]);
    halves.add(other);
    // Every order: the same bits.
    EXPECT_EQ(forward.value(), backward.value());
    EXPECT_EQ(forward.value(), halves.value());
    // Within one ulp of the correctly rounded sum (the contract allows 2).
    const double ulp = std::fabs(std::nextafter(want, 2 * want) - want);
    EXPECT_LE(std::fabs(forward.value() - want), ulp) << "trial " << trial;
  }
}

}  // namespace
}  // namespace mantissa::numerics
