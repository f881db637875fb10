// The fixed-order average of contributions, against sums written out directly.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/dist/reduction.hpp"
#include "wire_bound.hpp"

namespace mantissa::dist {
namespace {

std::vector<const void*> pointers(const std::vector<std::vector<float>>& c) {
  std::vector<const void*> p;
  for (const auto& v : c) p.push_back(v.data());
  return p;
}

std::vector<std::vector<float>> random_contributions(int ranks, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<std::vector<float>> c(static_cast<std::size_t>(ranks), std::vector<float>(n));
  for (auto& v : c) {
    for (float& x : v)
      x = d(rng) * std::exp2(static_cast<float>(static_cast<int>(rng() % 20) - 10));
  }
  return c;
}

TEST(AverageInRankOrder, AddsInRankOrderThenMultipliesByTheInverseOnce) {
  // Float32 addition is not associative: only rank order gives 0.25 here.
  // ((1e8 + 1) - 1e8) + 1 = 1, times 1/4; (1e8 - 1e8) + 1 + 1 would give 0.5.
  const std::vector<std::vector<float>> c = {{1e8f}, {1.0f}, {-1e8f}, {1.0f}};
  float out = 0;
  average_in_rank_order(pointers(c), 1, WireFormat::float32, &out);
  EXPECT_EQ(out, 0.25f);
}

TEST(AverageInRankOrder, Float32IsTheSequentialSumTimesTheRoundedInverse) {
  for (const int ranks : {2, 3, 5}) {
    const std::size_t n = 5000;  // more than one block
    const auto c = random_contributions(ranks, n, 7u + static_cast<unsigned>(ranks));
    std::vector<float> out(n);
    average_in_rank_order(pointers(c), static_cast<std::int64_t>(n), WireFormat::float32,
                          out.data());
    const float inverse = 1.0f / static_cast<float>(ranks);
    for (std::size_t i = 0; i < n; ++i) {
      float s = c[0][i];
      for (int r = 1; r < ranks; ++r) s += c[static_cast<std::size_t>(r)][i];
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(s * inverse))
          << "ranks " << ranks << " element " << i;
    }
  }
}

TEST(SumInRankOrder, Float32IsTheSequentialSumWithoutAMultiplication) {
  // Rank order: ((1e8 + 1) - 1e8) + 1 = 1 (1e8 + 1 rounds to 1e8); (1e8 - 1e8) + 1 + 1 = 2.
  const std::vector<std::vector<float>> order = {{1e8f}, {1.0f}, {-1e8f}, {1.0f}};
  float out = 0;
  sum_in_rank_order(pointers(order), 1, WireFormat::float32, &out);
  EXPECT_EQ(out, 1.0f);
  const std::size_t n = 5000;
  const auto c = random_contributions(3, n, 29u);
  std::vector<float> sums(n);
  sum_in_rank_order(pointers(c), static_cast<std::int64_t>(n), WireFormat::float32, sums.data());
  for (std::size_t i = 0; i < n; ++i) {
    const float want = (c[0][i] + c[1][i]) + c[2][i];
    ASSERT_EQ(std::bit_cast<std::uint32_t>(sums[i]), std::bit_cast<std::uint32_t>(want)) << i;
  }
}

TEST(AverageInRankOrder, OutputMayBeAContribution) {
  std::vector<std::vector<float>> c = {{1.0f, 2.0f}, {3.0f, 6.0f}};
  average_in_rank_order(pointers(c), 2, WireFormat::float32, c[1].data());
  EXPECT_EQ(c[1], (std::vector<float>{2.0f, 4.0f}));
}

TEST(AverageInRankOrder, InfinityAndNanReachTheResult) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> c = {{1.0f, inf, 1.0f}, {inf, -inf, 2.0f}};
  std::vector<float> out(3);
  average_in_rank_order(pointers(c), 3, WireFormat::float32, out.data());
  EXPECT_EQ(out[0], inf);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 1.5f);
}

// The contributions rounded onto a bfloat16 wire, reduced (averaged or summed), decoded.
std::vector<float> reduce_over_bfloat16_wire(const std::vector<std::vector<float>>& c,
                                             bool average) {
  const std::size_t n = c[0].size();
  std::vector<std::vector<std::uint16_t>> wire(c.size(), std::vector<std::uint16_t>(n));
  std::vector<const void*> p;
  for (std::size_t r = 0; r < c.size(); ++r) {
    encode_wire(c[r].data(), static_cast<std::int64_t>(n), WireFormat::bfloat16, wire[r].data());
    p.push_back(wire[r].data());
  }
  std::vector<std::uint16_t> out(n);
  if (average) {
    average_in_rank_order(p, static_cast<std::int64_t>(n), WireFormat::bfloat16, out.data());
  } else {
    sum_in_rank_order(p, static_cast<std::int64_t>(n), WireFormat::bfloat16, out.data());
  }
  std::vector<float> result(n);
  decode_wire(out.data(), static_cast<std::int64_t>(n), WireFormat::bfloat16, result.data());
  return result;
}

TEST(AverageInRankOrder, Bfloat16WireStaysWithinItsBoundAndGivesBfloat16Values) {
  for (const bool average : {true, false}) {
    for (const int ranks : {2, 3, 8}) {
      const std::size_t n = 3000;
      const auto c = random_contributions(ranks, n, 11u + static_cast<unsigned>(ranks));
      const std::vector<float> result = reduce_over_bfloat16_wire(c, average);
      for (std::size_t i = 0; i < n; ++i) {
        double sum = 0, sum_abs = 0;
        for (const auto& v : c) {
          sum += v[i];
          sum_abs += std::fabs(v[i]);
        }
        const double want = average ? sum / ranks : sum;
        const double bound = average ? testing::bfloat16_wire_bound(ranks, sum_abs / ranks)
                                     : testing::bfloat16_wire_sum_bound(ranks, sum_abs);
        ASSERT_LE(std::fabs(result[i] - want), bound)
            << (average ? "average" : "sum") << ", ranks " << ranks << " element " << i;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(result[i]) & 0xffffu, 0u);
      }
    }
  }
}

TEST(WireFormat, Bfloat16RoundsToNearestEven) {
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even gives 1; 1 + 3 * 2^-8 gives 1 + 2^-6.
  const float in[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  std::uint16_t wire[2];
  encode_wire(in, 2, WireFormat::bfloat16, wire);
  EXPECT_EQ(wire[0], 0x3f80);
  EXPECT_EQ(wire[1], 0x3f82);
  EXPECT_EQ(wire_bytes(WireFormat::bfloat16), 2);
  EXPECT_EQ(wire_bytes(WireFormat::float32), 4);
}

}  // namespace
}  // namespace mantissa::dist
