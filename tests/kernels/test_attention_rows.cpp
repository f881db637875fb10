// The fused heads' row passes (attention_rows.hpp): the AVX-512 sweeps against their scalar
// twins bit for bit, and the twins against double-precision exp and the numerics codec (and
// the log-sum-exp against the general softmax's, bit for bit).
#include "mantissa/kernels/attention_rows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lane_sums.hpp"  // src/kernels: the general softmax's row max
#include "mantissa/numerics/convert.hpp"
#include "vector_exp.hpp"  // src/kernels: the general softmax's exp sum

namespace mantissa::kernels {
namespace {

using numerics::Format;

float from_bits(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Scores as softmax sees them: mostly within a few units of the shift, some far below (exp
// underflows to 0), a few specials.
std::vector<float> scores(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> s(n);
  for (float& x : s) x = normal(rng);
  for (std::size_t i = 5; i < n; i += 17) s[i] = -90.0f - static_cast<float>(i);
  if (n > 40) {
    s[3] = std::numeric_limits<float>::quiet_NaN();
    s[11] = -std::numeric_limits<float>::infinity();
    s[29] = 88.0f;
  }
  return s;
}

TEST(AttentionRows, ProbabilitiesMatchTheTwinAndDoubleExp) {
  for (std::int64_t width : {1, 15, 16, 17, 64, 257}) {
    for (std::int64_t valid : {std::int64_t{0}, width / 2, width}) {
      const auto s = scores(static_cast<std::size_t>(width), static_cast<unsigned>(width + valid));
      const float shift = 1.25f;
      std::vector<std::uint16_t> bits(width + 3, 7), twin(width + 3, 7);
      std::vector<float> p(width, -1), p_twin(width, -1);
      probabilities_bf16(s.data(), valid, width, shift, p.data(), bits.data());
      probabilities_bf16_ref(s.data(), valid, width, shift, p_twin.data(), twin.data());
      EXPECT_EQ(bits, twin) << "width " << width << " valid " << valid;
      for (std::int64_t c = 0; c < width; ++c) {
        EXPECT_EQ(std::memcmp(&p[c], &p_twin[c], 4), 0) << c;
        const float value = from_bits(bits[c]);
        if (!std::isnan(value)) {
          EXPECT_EQ(value, p[c]) << c;  // the float output is the bits' value
        }
        if (c >= valid) {
          EXPECT_EQ(bits[c], 0) << "past valid: " << c;
          continue;
        }
        const double want = std::exp(static_cast<double>(s[c]) - shift);
        if (std::isnan(s[c])) {
          EXPECT_TRUE(std::isnan(from_bits(bits[c])));
        } else if (want < 2e-38) {  // the formula's documented cut below -86.99
          EXPECT_LE(from_bits(bits[c]), 2e-38);
        } else {
          // bf16 rounding (half an ulp: 2^-8 relative) on top of the polynomial's 2e-7.
          EXPECT_NEAR(from_bits(bits[c]), want, want * (std::ldexp(1.0, -8) + 4e-7)) << c;
        }
      }
      EXPECT_EQ(bits[width], 7) << "nothing written past width";
    }
  }
  // No float output asked for: the bits alone.
  const auto s = scores(40, 3);
  std::vector<std::uint16_t> bits(40), twin(40);
  probabilities_bf16(s.data(), 33, 40, 0.0f, nullptr, bits.data());
  probabilities_bf16_ref(s.data(), 33, 40, 0.0f, nullptr, twin.data());
  EXPECT_EQ(bits, twin);
}

TEST(AttentionRows, LogSumExpMatchesTheTwinAndDouble) {
  const float scale = 0.125f;
  // Every length from 0 to 70 (each way a row ends: whole vectors of 16, a group of 8, a
  // tail), then long rows; scores with specials only where the row holds them.
  for (std::int64_t n = 0; n <= 300; n += n < 70 ? 1 : 23) {
    const auto raw = scores(static_cast<std::size_t>(n), static_cast<unsigned>(n));
    std::vector<float> s(raw.begin(), raw.end()), twin = s;
    s.push_back(7.0f);  // one past the row: not touched
    twin.push_back(7.0f);
    const float l = scaled_log_sum_exp(s.data(), n, scale);
    const float lt = scaled_log_sum_exp_ref(twin.data(), n, scale);
    EXPECT_EQ(std::memcmp(s.data(), twin.data(), s.size() * 4), 0) << "n " << n;
    EXPECT_EQ(s[n], 7.0f);
    if (std::isnan(lt)) {
      EXPECT_TRUE(std::isnan(l)) << "n " << n;
    } else {
      EXPECT_EQ(std::memcmp(&l, &lt, 4), 0) << "n " << n << ": " << l << " vs " << lt;
    }
    // The twin against the definition in double (a row with a NaN has a NaN log-sum-exp).
    bool has_nan = false;
    double m = -INFINITY;
    for (std::int64_t c = 0; c < n; ++c) {
      const double x = static_cast<double>(raw[c] * scale);  // the scaled float, as stored
      const float want = raw[c] * scale;
      EXPECT_EQ(std::memcmp(&twin[c], &want, 4), 0) << c;
      has_nan = has_nan || std::isnan(x);
      if (!std::isnan(x)) m = std::max(m, x);
    }
    // The general softmax (attention.cpp's softmax_rows) computes the same float.
    std::vector<float> tmp(static_cast<std::size_t>(n) + 1);
    const float top = detail::row_max(twin.data(), n);
    const float general = top + std::log(detail::exp_shifted(twin.data(), tmp.data(), n, top));
    if (!std::isnan(lt)) {
      EXPECT_EQ(std::memcmp(&general, &lt, 4), 0) << "n " << n;
    }
    if (n == 0) {
      EXPECT_EQ(lt, -INFINITY);
      continue;
    }
    if (has_nan) {
      EXPECT_TRUE(std::isnan(lt)) << "n " << n;
      continue;
    }
    double sum = 0;
    for (std::int64_t c = 0; c < n; ++c) sum += std::exp(static_cast<double>(twin[c]) - m);
    // exp's 2e-7 and one float rounding per addition (at most n of them), relative to the sum:
    // the log moves by at most that much in absolute terms.
    EXPECT_NEAR(lt, m + std::log(sum), 1e-6 * (1 + std::fabs(m)) + 3e-7 * static_cast<double>(n))
        << "n " << n;
  }
}

TEST(AttentionRows, ScoreGradientsAreTheFloatFormulaRoundedToBfloat16) {
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t width : {1, 16, 31, 100}) {
    for (std::int64_t n : {width, width - 1}) {
      std::vector<float> dp(width), p(width);
      for (auto& x : dp) x = normal(rng);
      for (auto& x : p) x = std::fabs(normal(rng)) / 4;
      if (width > 20) dp[7] = std::numeric_limits<float>::infinity();
      const float delta = 0.375f, scale = 0.125f;
      std::vector<std::uint16_t> bits(width), twin(width), want(width);
      score_gradients_bf16(dp.data(), p.data(), delta, scale, n, width, bits.data());
      score_gradients_bf16_ref(dp.data(), p.data(), delta, scale, n, width, twin.data());
      EXPECT_EQ(bits, twin);
      std::vector<float> ds(width, 0.0f);
      for (std::int64_t c = 0; c < n; ++c) ds[c] = p[c] * (dp[c] - delta) * scale;
      numerics::encode_array(ds.data(), ds.size(), Format::bfloat16, want.data());
      EXPECT_EQ(twin, want) << "width " << width;
    }
  }
}

}  // namespace
}  // namespace mantissa::kernels
