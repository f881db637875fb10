// GEMM: the oneDNN fast path against the double-accumulating twin, and the mixed-precision
// algorithms against a double-precision GEMM of the same format values, within the error
// bounds docs/engine.md states per precision_opt_level.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::kernels {
namespace {

struct Case {
  std::int64_t m, n, k;
  bool ta, tb;
};

std::vector<float> random_values(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// |C - exact| per element, and sum_p |a_ip| |b_pj| (the scale of the error bounds).
struct Errors {
  std::vector<double> exact, abs_sum;
};

Errors exact_product(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b) {
  Errors e;
  e.exact.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  e.abs_sum.assign(e.exact.size(), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      double acc = 0, mag = 0;
      for (std::int64_t p = 0; p < s.k; ++p) {
        const double x = s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
        const double y = s.trans_b ? b[j * s.ldb + p] : b[p * s.ldb + j];
        acc += x * y;
        mag += std::fabs(x * y);
      }
      e.exact[static_cast<std::size_t>(i * s.n + j)] = acc;
      e.abs_sum[static_cast<std::size_t>(i * s.n + j)] = mag;
    }
  }
  return e;
}

// fp32 accumulation bound: about k * 2^-24 * sum|a||b| (plus rounding of the result).
double fp32_bound(std::int64_t k, double abs_sum) {
  return (static_cast<double>(k) + 2.0) * std::ldexp(1.0, -24) * abs_sum;
}

TEST(Gemm, OneDnnFp32MatchesReferenceOnShapesAndTransposes) {
  std::mt19937 rng(1);
  for (const Case& c : {Case{1, 1, 1, false, false}, Case{7, 5, 3, false, false},
                        Case{33, 17, 65, true, false}, Case{16, 40, 9, false, true},
                        Case{64, 48, 128, true, true}, Case{3, 200, 1, false, false}}) {
    const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    const auto a = random_values(static_cast<std::size_t>(c.m * c.k), rng);
    const auto b = random_values(static_cast<std::size_t>(c.k * c.n), rng);
    for (bool accumulate : {false, true}) {
      std::vector<float> fast(static_cast<std::size_t>(c.m * c.n), 0.5f), ref = fast;
      gemm_f32(s, a.data(), b.data(), fast.data(), accumulate);
      gemm_ref(s, a.data(), b.data(), ref.data(), accumulate);
      const Errors e = exact_product(s, a, b);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        const double bound = fp32_bound(c.k, e.abs_sum[i] + (accumulate ? 0.5 : 0.0));
        ASSERT_NEAR(fast[i], ref[i], bound) << c.m << "x" << c.n << "x" << c.k << " @" << i;
      }
    }
  }
}

TEST(Gemm, StridedLeadingDimensionsWriteOnlyTheirBlock) {
  std::mt19937 rng(2);
  // A 4x6 block of an 8-wide C; the padding columns must stay untouched.
  GemmShape s{4, 6, 5, false, false, 7, 9, 8};
  const auto a = random_values(4 * 7, rng);
  const auto b = random_values(5 * 9, rng);
  std::vector<float> c(4 * 8, 42.0f), r(4 * 8, 42.0f);
  gemm_f32(s, a.data(), b.data(), c.data(), false);
  gemm_ref(s, a.data(), b.data(), r.data(), false);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (j >= 6) {
        EXPECT_EQ(c[i * 8 + j], 42.0f);
      } else {
        EXPECT_NEAR(c[i * 8 + j], r[i * 8 + j], 1e-5);
      }
    }
  }
}

// Inputs: random, plus adversarial values (subnormals, values near the format's max).
std::vector<float> format_values(std::size_t n, Format f, std::mt19937& rng, bool adversarial) {
  std::vector<float> v = random_values(n, rng);
  if (adversarial) {
    const double max = numerics::traits(f).max;
    const double sub = numerics::traits(f).min_subnormal;
    std::uniform_int_distribution<int> pick(0, 3);
    std::uniform_int_distribution<int> mult(1, 1000);
    for (float& x : v) {
      switch (pick(rng)) {
        case 0:
          x = static_cast<float>(sub * mult(rng));  // subnormal range
          break;
        case 1:
          x = static_cast<float>(-max * (0.5 + mult(rng) / 2000.0) / 4096.0);  // large
          break;
        default:
          break;
      }
    }
  }
  numerics::round_to_format(v.data(), v.size(), f);
  return v;
}

class MixedGemm : public ::testing::TestWithParam<Format> {};

TEST_P(MixedGemm, Pol0HasExactProducts) {
  const Format f = GetParam();
  std::mt19937 rng(3);
  for (GemmAlgorithm algo : {GemmAlgorithm::automatic, GemmAlgorithm::decomposed}) {
    for (bool adversarial : {false, true}) {
      for (const Case& c : {Case{32, 24, 96, false, false}, Case{17, 9, 300, true, true}}) {
        const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
        const auto a = format_values(static_cast<std::size_t>(c.m * c.k), f, rng, adversarial);
        const auto b = format_values(static_cast<std::size_t>(c.k * c.n), f, rng, adversarial);
        std::vector<float> out(static_cast<std::size_t>(c.m * c.n));
        gemm(s, a.data(), b.data(), out.data(), false, {f, precision::matmul_passes(f, 0), algo});
        const Errors e = exact_product(s, a, b);
        for (std::size_t i = 0; i < out.size(); ++i) {
          ASSERT_LE(std::fabs(out[i] - e.exact[i]), fp32_bound(c.k, e.abs_sum[i]))
              << numerics::name(f) << " algo " << static_cast<int>(algo) << " adversarial "
              << adversarial << " element " << i;
        }
      }
    }
  }
}

TEST_P(MixedGemm, Pol1AndPol2StayWithinTheirStatedBounds) {
  const Format f = GetParam();
  std::mt19937 rng(4);
  const GemmShape s = GemmShape::dense(40, 30, 200);
  for (bool adversarial : {false, true}) {
    const auto a = format_values(40 * 200, f, rng, adversarial);
    const auto b = format_values(200 * 30, f, rng, adversarial);
    const Errors e = exact_product(s, a, b);
    for (int pol : {1, 2}) {
      // POL 1 drops lo*lo: |lo| <= 2^-9 |x| each, so at most 2^-18 sum|a||b| more.
      // POL 2 rounds both inputs to bf16: at most (2 * 2^-9 + 2^-18) sum|a||b| more.
      const double extra =
          pol == 1 ? std::ldexp(1.0, -18) : 2 * std::ldexp(1.0, -9) + std::ldexp(1.0, -18);
      std::vector<float> out(30 * 40);
      gemm(s, a.data(), b.data(), out.data(), false,
           {f, precision::matmul_passes(f, pol), GemmAlgorithm::decomposed});
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double bound = fp32_bound(200, e.abs_sum[i]) + extra * e.abs_sum[i];
        ASSERT_LE(std::fabs(out[i] - e.exact[i]), bound) << "POL " << pol << " element " << i;
      }
    }
  }
}

TEST_P(MixedGemm, DecomposedPol1DropsOnlyTheLoLoTerm) {
  // One product whose lo*lo is far above fp32 rounding: POL 1 must differ from POL 0 by it.
  const Format f = GetParam();
  // x = 1 + 2^-8 + 2^-9 (a float16/cbfloat16 value): hi = bf16(x) = 1 + 2^-7,
  // lo = -2^-9. lo*lo = 2^-18.
  const float x = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -9);
  const GemmShape s = GemmShape::dense(1, 1, 1);
  float pol0 = 0, pol1 = 0;
  gemm(s, &x, &x, &pol0, false, {f, 4, GemmAlgorithm::decomposed});
  gemm(s, &x, &x, &pol1, false, {f, 3, GemmAlgorithm::decomposed});
  EXPECT_EQ(static_cast<double>(pol0), static_cast<double>(x) * x);
  EXPECT_EQ(static_cast<double>(pol0) - pol1, std::ldexp(1.0, -18));
}

INSTANTIATE_TEST_SUITE_P(Formats, MixedGemm, ::testing::Values(Format::float16, Format::cbfloat16),
                         [](const auto& info) { return std::string(numerics::name(info.param)); });

TEST(Gemm, BFloat16AndFp8InputsAreExactInOnePass) {
  std::mt19937 rng(5);
  for (Format f : {Format::bfloat16, Format::float8_e4m3, Format::float8_e5m2}) {
    const GemmShape s = GemmShape::dense(12, 10, 64);
    const auto a = format_values(12 * 64, f, rng, false);
    const auto b = format_values(64 * 10, f, rng, false);
    std::vector<float> out(120);
    gemm(s, a.data(), b.data(), out.data(), false, {f, 1, GemmAlgorithm::decomposed});
    const Errors e = exact_product(s, a, b);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_LE(std::fabs(out[i] - e.exact[i]), fp32_bound(64, e.abs_sum[i]));
    }
  }
}

}  // namespace
}  // namespace mantissa::kernels
