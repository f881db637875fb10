// AMX tile products (amx_pairs.hpp): the scalar twin against hand-derived results of the
// instruction's definition, and the tiles against the twin bit for bit.
#include "mantissa/kernels/amx_pairs.hpp"

#include "mantissa/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace mantissa::kernels {
namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

std::uint32_t pair_word(float even, float odd) {  // both must be bf16 values
  return bits_of(even) >> 16 | (bits_of(odd) & 0xFFFF0000u);
}

float one_chunk(float c, const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  return amx_chunk_ref(c, a.data(), 1, b.data(), 1, static_cast<std::int64_t>(a.size()));
}

TEST(AmxPairs, EvenAndOddProductsAccumulateApart) {
  // Even chain: 2^24, then + 1 rounds back to 2^24 (a tie, to even). Odd chain: 1, then
  // - 2^24 gives -(2^24 - 1), exactly. The chains meet: 2^24 - (2^24 - 1) = 1. Taken in the
  // AVX512-BF16 order (one chain, pair by pair) the same products give 0.
  const float big = 16777216.0f;
  const std::vector<std::uint32_t> a = {pair_word(big, 1.0f), pair_word(1.0f, -big)};
  const std::vector<std::uint32_t> b = {pair_word(1.0f, 1.0f), pair_word(1.0f, 1.0f)};
  EXPECT_EQ(one_chunk(0.0f, a, b), 1.0f);
  // c joins after the chains: c = 2^24, chains 1 and 1 (sum 2 exactly) give 2^24 + 2; added
  // one at a time to c each would round away.
  const std::vector<std::uint32_t> ones = {pair_word(1.0f, 1.0f)};
  EXPECT_EQ(one_chunk(big, ones, ones), big + 2.0f);
}

TEST(AmxPairs, SubnormalsReadAsZeroAndResultsFlush) {
  // A subnormal operand is zero: 2^-130 x 2^100 would be 2^-30.
  const float tiny = std::ldexp(1.0f, -130), huge = std::ldexp(1.0f, 100);
  EXPECT_EQ(one_chunk(0.0f, {pair_word(tiny, 0.0f)}, {pair_word(huge, 0.0f)}), 0.0f);
  // A subnormal c is zero too: c = 2^-140 plus nothing gives +0.
  EXPECT_EQ(bits_of(one_chunk(std::ldexp(1.0f, -140), {0u}, {0u})), 0u);
  // A product below the normal range flushes to a zero of its sign: -2^-100 x 2^-30.
  const float n100 = -std::ldexp(1.0f, -100), p30 = std::ldexp(1.0f, -30);
  const std::vector<std::uint32_t> a(16, pair_word(n100, n100)), b(16, pair_word(p30, p30));
  EXPECT_EQ(bits_of(one_chunk(-0.0f, a, b)), 0x80000000u);  // -0 + (-0 + -0)
  EXPECT_EQ(bits_of(one_chunk(0.0f, a, b)), 0u);            // +0 + -0
  // The chunk's padding pairs are zeros that count: one pair of -0 products leaves each chain
  // at +0 after the fifteen zero pairs (-0 + +0), so c = -0 becomes +0.
  EXPECT_EQ(bits_of(one_chunk(-0.0f, {pair_word(-1.0f, -1.0f)}, {0u})), 0u);
}

// Random words: normal values over a wide range (some products overflow), zeros and
// subnormals.
std::vector<std::uint32_t> random_words(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 29), exponent(60, 190), mantissa(0, 127);
  auto half = [&]() -> std::uint32_t {
    const int kind = pick(rng);
    const std::uint32_t sign = (pick(rng) % 2) << 15;
    if (kind == 0) return sign;
    if (kind == 1) return sign | static_cast<std::uint32_t>(mantissa(rng) | 1);
    return sign | static_cast<std::uint32_t>(exponent(rng)) << 7 |
           static_cast<std::uint32_t>(mantissa(rng));
  };
  std::vector<std::uint32_t> w(n);
  for (auto& x : w) x = half() | half() << 16;
  return w;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else {
      EXPECT_EQ(bits_of(got[i]), bits_of(want[i]))
          << "element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

TEST(AmxPairs, TilesMatchTheTwinBitForBit) {
  if (!amx_available()) GTEST_SKIP() << "no AMX tiles here: " << amx_unavailable();
  struct Shape {
    std::int64_t m, n, pairs;
  };
  unsigned seed = 1;
  for (Shape s : {Shape{1, 1, 1}, Shape{32, 32, 16}, Shape{64, 256, 32}, Shape{17, 33, 15},
                  Shape{31, 47, 40}, Shape{64, 64, 33}, Shape{5, 70, 0}}) {
    for (bool accumulate : {false, true}) {
      const std::int64_t lda = s.pairs + 3, ldb = s.n + 5, ldc = s.n + 2;
      const auto a = random_words(static_cast<std::size_t>(s.m * lda + 1), seed++);
      const auto b =
          random_words(static_cast<std::size_t>(std::max<std::int64_t>(s.pairs, 1) * ldb), seed++);
      std::vector<float> start(static_cast<std::size_t>(s.m * ldc));
      std::mt19937 rng(seed++);
      std::normal_distribution<float> normal(0.0f, 1000.0f);
      for (float& v : start) v = normal(rng);
      std::vector<float> got = start, want = start;
      amx_pair_product(s.m, s.n, s.pairs, {a.data(), lda, 1}, {b.data(), ldb}, got.data(), ldc,
                       accumulate);
      amx_pair_product_ref(s.m, s.n, s.pairs, {a.data(), lda, 1}, {b.data(), ldb}, want.data(), ldc,
                           accumulate);
      SCOPED_TRACE("m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " pairs " +
                   std::to_string(s.pairs) + (accumulate ? " accumulate" : ""));
      expect_same_bits(got, want);
    }
  }
}

TEST(AmxPairs, RefusesWhatItCannotRun) {
  const std::uint32_t w = 0;
  float c = 0;
  if (!amx_available()) {
    EXPECT_THROW(amx_pair_product(1, 1, 1, {&w, 1, 1}, {&w, 1}, &c, 1, false), Error);
    GTEST_SKIP() << "no AMX tiles here: " << amx_unavailable();
  }
  EXPECT_THROW(amx_pair_product(1, 1, 1, {&w, 1, 2}, {&w, 1}, &c, 1, false), Error);
}

}  // namespace
}  // namespace mantissa::kernels
