// GEMM. The fp32 FMA route against its scalar twin bit for bit on every ISA this CPU has (one
// fma chain per element, k in order), the twin against exact arithmetic in double, the
// mixed-precision algorithms within the error bounds docs/engine.md states per
// precision_opt_level, and the native bf16 route against exact results (bit for bit where every
// partial sum is exact, else within the derived bound). Routes this CPU lacks print a skip line
// naming the missing feature.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "fpu_flags.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/amx_pairs.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
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

// Values of `f`, also stored packed in f's own width.
struct Stored {
  std::vector<float> values;
  std::vector<std::uint8_t> packed;
  Format format;
  Operand operand() const { return Operand(packed.data(), format); }
};

Stored store(std::vector<float> v, Format f) {
  numerics::round_to_format(v.data(), v.size(), f);
  Stored s{std::move(v), {}, f};
  s.packed.resize(s.values.size() * static_cast<std::size_t>(numerics::traits(f).storage_bytes));
  numerics::encode_array(s.values.data(), s.values.size(), f, s.packed.data());
  return s;
}

// The exact product in double, and sum_p |a_ip| |b_pj| (the scale of the error bounds).
struct Exact {
  std::vector<double> value, abs_sum;
};

Exact exact_product(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b) {
  Exact e;
  e.value.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  e.abs_sum.assign(e.value.size(), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      double acc = 0, mag = 0;
      for (std::int64_t p = 0; p < s.k; ++p) {
        const double x = s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
        const double y = s.trans_b ? b[j * s.ldb + p] : b[p * s.ldb + j];
        acc += x * y;
        mag += std::fabs(x * y);
      }
      e.value[static_cast<std::size_t>(i * s.n + j)] = acc;
      e.abs_sum[static_cast<std::size_t>(i * s.n + j)] = mag;
    }
  }
  return e;
}

// Recursive summation of k exact products in fp32: at most (k + 1) u sum|a||b|, u = 2^-24.
double fp32_bound(std::int64_t k, double abs_sum) {
  return (static_cast<double>(k) + 2.0) * std::ldexp(1.0, -24) * abs_sum;
}

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Edges of every blocking level: sizes off the micro-kernels' multiples, k past one depth
// block, odd (a last bf16 pair of one element) and not a multiple of 8, m past one row chunk,
// n past one column panel, and k = 0.
constexpr Case kEdgeCases[] = {{1, 1, 1, false, false},      {13, 33, 7, false, false},
                               {25, 17, 301, true, false},   {37, 70, 9, false, true},
                               {50, 41, 517, true, true},    {800, 40, 20, false, true},
                               {30, 2100, 12, false, false}, {3, 5, 0, false, false}};

// --- The scalar twin against exact arithmetic --------------------------------------------

TEST(GemmRef, MatchesExactProductsWithinTheFp32Bound) {
  std::mt19937 rng(1);
  for (const Case& c :
       {Case{1, 1, 1, false, false}, Case{7, 5, 3, false, false}, Case{33, 17, 65, true, false},
        Case{16, 40, 9, false, true}, Case{24, 48, 128, true, true}}) {
    const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    const auto a = random_values(static_cast<std::size_t>(c.m * c.k), rng);
    const auto b = random_values(static_cast<std::size_t>(c.k * c.n), rng);
    const Exact e = exact_product(s, a, b);
    for (bool accumulate : {false, true}) {
      std::vector<float> ref(static_cast<std::size_t>(c.m * c.n), 0.5f);
      gemm_ref(s, a.data(), b.data(), ref.data(), accumulate);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        const double want = e.value[i] + (accumulate ? 0.5 : 0.0);
        ASSERT_NEAR(ref[i], want, fp32_bound(c.k, e.abs_sum[i] + 0.5)) << i;
      }
    }
  }
}

TEST(GemmRef, SumsEachElementAsOneFmaChainInKOrder) {
  // 1 + 2^-24 + 2^-24: in k order each addition ties back to 1 (nearest-even); any other
  // order (2^-24 + 2^-24 first) gives 1 + 2^-23. Then C + P rounds once: 3 + 1 = 4.
  const float a[3] = {1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -24)};
  const float b[3] = {1.0f, 1.0f, 1.0f};
  const GemmShape s = GemmShape::dense(1, 1, 3);
  float c = 0.0f;
  gemm_ref(s, a, b, &c, false);
  EXPECT_EQ(c, 1.0f);
  c = 3.0f;
  gemm_ref(s, a, b, &c, true);
  EXPECT_EQ(c, 4.0f);
}

// --- The fp32 FMA route, every ISA, against the twin bit for bit ------------------------

class GemmIsaTest : public ::testing::TestWithParam<GemmIsa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) {
      GTEST_SKIP() << "skip: the " << gemm_isa_name(GetParam())
                   << " GEMM micro-kernel needs a feature this CPU lacks (it has: "
                   << numerics::describe(numerics::cpu_features()) << ")";
    }
    previous_ = active_gemm_isa();
    set_gemm_isa(GetParam());
  }
  void TearDown() override {
    if (cpu_supports(GetParam())) set_gemm_isa(previous_);
  }
  GemmIsa previous_ = GemmIsa::scalar;
};

// v with signed zeros and tiny values among its values (every 5th +0, every 11th -0, every
// 7th about +-2^-35: cbfloat16 subnormals, float16 zeros, bfloat16 normals): the packing's
// decode keeps them on its fast path.
std::vector<float> with_zeros(std::vector<float> v) {
  for (std::size_t i = 0; i < v.size(); i += 5) v[i] = 0.0f;
  for (std::size_t i = 3; i < v.size(); i += 11) v[i] = -0.0f;
  for (std::size_t i = 1; i < v.size(); i += 7) v[i] = std::ldexp(v[i] < 0 ? -1.5f : 1.25f, -35);
  return v;
}

// The route `p` names against `twin`, bit for bit: on all threads and in one thread, with C
// written and accumulated into, on every edge case with operands of format f (B with zeros
// and tiny values). Stops at the first difference (gtest fatal failures in a helper).
using Twin = void (*)(const GemmShape&, Operand, Operand, float*, bool, const GemmPrecision&);
void expect_route_matches_twin(Twin twin, const GemmPrecision& p, std::mt19937& rng) {
  for (const Case& c : kEdgeCases) {
    const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    const Stored a = store(random_values(static_cast<std::size_t>(c.m * c.k), rng), p.format);
    const Stored b =
        store(with_zeros(random_values(static_cast<std::size_t>(c.k * c.n), rng)), p.format);
    for (bool accumulate : {false, true}) {
      std::vector<float> ref(static_cast<std::size_t>(c.m * c.n), 0.25f);
      std::vector<float> all = ref, one = ref;
      twin(s, a.operand(), b.operand(), ref.data(), accumulate, p);
      gemm(s, a.operand(), b.operand(), all.data(), accumulate, p);
      gemm_in_thread(s, a.operand(), b.operand(), one.data(), accumulate, p);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(bits(all[i]), bits(ref[i]))
            << numerics::name(p.format) << " passes " << p.passes << " " << c.m << "x" << c.n << "x"
            << c.k << " element " << i;
        ASSERT_EQ(bits(one[i]), bits(ref[i])) << "in-thread, element " << i;
      }
    }
  }
}

// The route `p` names against `twin` on many threads (more than the machine's cores): tall
// products of one depth block (the whole product one chunk, each thread's C room reused per
// block of rows), one wider than a column block, one of several depth blocks, A and B either
// way; each thread's share is larger than on two threads, and nothing may be written past it.
void expect_many_threads_match_twin(Twin twin, const GemmPrecision& p) {
  constexpr Case kCases[] = {
      {2000, 70, 40, false, true}, {1500, 1100, 20, true, false}, {900, 50, 700, false, false}};
  std::mt19937 rng(21);
  const int before = omp_get_max_threads();
  for (const int threads : {7, 16}) {
    omp_set_num_threads(threads);
    for (const Case& c : kCases) {
      const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
      const Stored a = store(random_values(static_cast<std::size_t>(c.m * c.k), rng), p.format);
      const Stored b = store(random_values(static_cast<std::size_t>(c.k * c.n), rng), p.format);
      std::vector<float> ref(static_cast<std::size_t>(c.m * c.n)), out(ref.size());
      twin(s, a.operand(), b.operand(), ref.data(), false, p);
      gemm(s, a.operand(), b.operand(), out.data(), false, p);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        if (bits(out[i]) != bits(ref[i])) {
          omp_set_num_threads(before);
          FAIL() << threads << " threads, " << c.m << "x" << c.n << "x" << c.k << " element " << i;
        }
      }
    }
  }
  omp_set_num_threads(before);
}

TEST_P(GemmIsaTest, ManyThreadsMatchTheTwin) {
  expect_many_threads_match_twin(gemm_ref,
                                 {Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::fp32});
}

TEST_P(GemmIsaTest, MatchesTheScalarTwinBitForBitOnEveryShapeFormatAndThreadCount) {
  std::mt19937 rng(2);
  for (Format f : numerics::kTensorFormats) {
    expect_route_matches_twin(gemm_ref, {f, 1, GemmAlgorithm::automatic, GemmRoute::fp32}, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(GemmIsaTest, DecomposedPassesMatchTheTwinBitForBit) {
  std::mt19937 rng(3);
  for (Format f : {Format::float16, Format::cbfloat16}) {
    for (int passes : {1, 3, 4}) {
      const GemmShape s = GemmShape::dense(29, 35, 270, false, true);
      const Stored a = store(random_values(29 * 270, rng), f);
      const Stored b = store(random_values(270 * 35, rng), f);
      std::vector<float> ref(29 * 35), out(29 * 35);
      const GemmPrecision p{f, passes, GemmAlgorithm::decomposed, GemmRoute::fp32};
      gemm_ref(s, a.operand(), b.operand(), ref.data(), false, p);
      gemm(s, a.operand(), b.operand(), out.data(), false, p);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(bits(out[i]), bits(ref[i])) << numerics::name(f) << " passes " << passes;
      }
    }
  }
}

TEST_P(GemmIsaTest, Cbfloat16SubnormalOperandsCountWhateverTheFlushFlags) {
  // A of cbfloat16 subnormals (j x 2^-39, 0 < j < 512), B of small integers: every product and
  // partial sum is an integer multiple of 2^-39 below 2^24 of them, exact in float32 in any
  // order, so C is the exact sum (3 passes, POL 1: the products of the cbfloat16 values
  // themselves; 1 pass would round A to bfloat16 first). With flush-to-zero and denormals-are-zero
  // set, the packing's decode must still read A's values (a float32-subnormal intermediate would
  // read as 0).
  std::mt19937 rng(5);
  for (const Case& c : {Case{13, 33, 70, false, false}, Case{37, 20, 9, true, true}}) {
    const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    std::vector<float> a(static_cast<std::size_t>(c.m * c.k)),
        b(static_cast<std::size_t>(c.k * c.n));
    for (float& x : a)
      x = std::ldexp(static_cast<float>(1 + rng() % 511), -39) * (rng() % 2 ? 1.0f : -1.0f);
    for (float& x : b) x = static_cast<float>(static_cast<int>(rng() % 9) - 4);
    const Stored sa = store(a, Format::cbfloat16), sb = store(b, Format::cbfloat16);
    ASSERT_EQ(sa.values, a);  // stored exactly
    const Exact e = exact_product(s, a, b);
    std::vector<float> out(static_cast<std::size_t>(c.m * c.n), 7.0f);
    {
      const testing::FlushSubnormals flags;
      gemm(s, sa.operand(), sb.operand(), out.data(), false,
           {Format::cbfloat16, 3, GemmAlgorithm::automatic, GemmRoute::fp32});
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(static_cast<double>(out[i]), e.value[i])
          << c.m << "x" << c.n << "x" << c.k << " element " << i;
    }
  }
}

TEST_P(GemmIsaTest, KOrderChainHoldsInTheMicroKernels) {
  // The hand-derived case of GemmRef.SumsEachElementAsOneFmaChainInKOrder, in every lane.
  const std::int64_t m = 13, n = 37, k = 3;
  std::vector<float> a(m * k), b(k * n, 1.0f), c(m * n);
  for (std::int64_t i = 0; i < m; ++i) {
    a[i * k] = 1.0f;
    a[i * k + 1] = a[i * k + 2] = std::ldexp(1.0f, -24);
  }
  gemm(GemmShape::dense(m, n, k), a.data(), b.data(), c.data(), false,
       {Format::float32, 1, GemmAlgorithm::automatic, GemmRoute::fp32});
  for (float v : c) ASSERT_EQ(v, 1.0f);
}

TEST_P(GemmIsaTest, StridedOperandsWriteOnlyTheirBlock) {
  std::mt19937 rng(4);
  // A 20x30 block of a 40-wide C from strided, transposed, packed bf16 operands.
  GemmShape s{20, 30, 50, true, true, 27, 61, 40};
  const Stored a = store(random_values(50 * 27, rng), Format::bfloat16);
  const Stored b = store(random_values(30 * 61, rng), Format::bfloat16);
  std::vector<float> c(20 * 40, 42.0f), r(20 * 40, 42.0f);
  const GemmPrecision fp32{Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::fp32};
  gemm(s, a.operand(), b.operand(), c.data(), false, fp32);
  gemm_ref(s, a.operand(), b.operand(), r.data(), false, fp32);
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 40; ++j) {
      if (j >= 30) {
        ASSERT_EQ(c[i * 40 + j], 42.0f);
      } else {
        ASSERT_EQ(bits(c[i * 40 + j]), bits(r[i * 40 + j]));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, GemmIsaTest,
                         ::testing::Values(GemmIsa::scalar, GemmIsa::avx2, GemmIsa::avx512),
                         [](const auto& info) { return std::string(gemm_isa_name(info.param)); });

// Every route the product may take hands each element over once; the fp32 route gives the
// twin's bits, the automatic one (which may pick oneDNN's matmul) stays within the bound.
TEST(Gemm, EpilogueSeesEveryElementOnceInBounds) {
  std::mt19937 rng(5);
  for (const Case& c : {Case{5, 7, 3, false, false}, Case{900, 70, 40, true, false},
                        Case{40, 2500, 30, false, true}}) {
    const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    const auto a = random_values(static_cast<std::size_t>(c.m * c.k), rng);
    const auto b = random_values(static_cast<std::size_t>(c.k * c.n), rng);
    std::vector<float> want(static_cast<std::size_t>(c.m * c.n));
    gemm_ref(s, a.data(), b.data(), want.data(), false);
    const Exact e = exact_product(s, a, b);
    for (const GemmRoute route : {GemmRoute::fp32, GemmRoute::automatic}) {
      std::vector<int> seen(want.size(), 0);
      std::vector<float> got(want.size());
      const GemmPrecision precision{Format::float32, 1, GemmAlgorithm::automatic, route};
      gemm(
          s, a.data(), b.data(),
          [&](const GemmTile& t) {
            ASSERT_GE(t.row0, 0);
            ASSERT_LE(t.row0 + t.rows, c.m);
            ASSERT_GE(t.col0, 0);
            ASSERT_LE(t.col0 + t.cols, c.n);
            for (std::int64_t r = 0; r < t.rows; ++r) {
              for (std::int64_t j = 0; j < t.cols; ++j) {
                const std::size_t at = static_cast<std::size_t>((t.row0 + r) * c.n + t.col0 + j);
#pragma omp atomic
                ++seen[at];
                got[at] = t.values[r * t.ld + j];
              }
            }
          },
          precision);
      for (std::size_t i = 0; i < seen.size(); ++i) {
        ASSERT_EQ(seen[i], 1) << "element " << i;
        if (route == GemmRoute::fp32) {
          ASSERT_EQ(bits(got[i]), bits(want[i])) << "element " << i;
        } else {
          ASSERT_LE(std::fabs(got[i] - e.value[i]), fp32_bound(c.k, e.abs_sum[i])) << i;
        }
      }
    }
  }
}

TEST(Gemm, NegativeSizesAndBadPassCountsAreErrors) {
  float x = 1;
  EXPECT_THROW(gemm(GemmShape{-1, 1, 1, false, false, 1, 1, 1}, &x, &x, &x, false), Error);
  EXPECT_THROW(gemm(GemmShape::dense(1, 1, 1), &x, &x, &x, false, {Format::float16, 2}), Error);
}

// --- Mixed-precision algorithms against exact arithmetic --------------------------------

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
        gemm(s, a.data(), b.data(), out.data(), false,
             {f, precision::matmul_passes(f, 0), algo, GemmRoute::fp32});
        const Exact e = exact_product(s, a, b);
        const std::int64_t terms = algo == GemmAlgorithm::decomposed ? 4 * c.k : c.k;
        for (std::size_t i = 0; i < out.size(); ++i) {
          ASSERT_LE(std::fabs(out[i] - e.value[i]), fp32_bound(terms, e.abs_sum[i]))
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
    const Exact e = exact_product(s, a, b);
    for (int pol : {1, 2}) {
      // POL 1 drops lo*lo: |lo| <= 2^-8 |x| each (half a bf16 ulp; 2^-8 |x| at x = 1 + 2^-8,
      // a tie), so at most 2^-16 sum|a||b| more.
      // POL 2 rounds both inputs to bf16: at most (2 * 2^-8 + 2^-16) sum|a||b| more.
      const double extra =
          pol == 1 ? std::ldexp(1.0, -16) : 2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16);
      std::vector<float> out(30 * 40);
      gemm(s, a.data(), b.data(), out.data(), false,
           {f, precision::matmul_passes(f, pol), GemmAlgorithm::decomposed, GemmRoute::fp32});
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double bound = fp32_bound(4 * 200, e.abs_sum[i]) + extra * e.abs_sum[i];
        ASSERT_LE(std::fabs(out[i] - e.value[i]), bound) << "POL " << pol << " element " << i;
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
  gemm(s, &x, &x, &pol0, false, {f, 4, GemmAlgorithm::decomposed, GemmRoute::fp32});
  gemm(s, &x, &x, &pol1, false, {f, 3, GemmAlgorithm::decomposed, GemmRoute::fp32});
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
    gemm(s, a.data(), b.data(), out.data(), false,
         {f, 1, GemmAlgorithm::decomposed, GemmRoute::fp32});
    const Exact e = exact_product(s, a, b);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_LE(std::fabs(out[i] - e.value[i]), fp32_bound(64, e.abs_sum[i]));
    }
  }
}

// --- The bf16 routes: mantissa's AVX512-BF16 GEMM and oneDNN's bf16 matmul ---------------

class Bf16RouteTest : public ::testing::TestWithParam<GemmRoute> {
 protected:
  void SetUp() override {
    const std::string why = route_unavailable(GetParam(), Format::bfloat16);
    if (!why.empty()) {
      GTEST_SKIP() << "skip: route " << route_name(GetParam()) << " not run: " << why;
    }
  }
  GemmPrecision on(Format f, int passes) const {
    return {f, passes, GemmAlgorithm::automatic, GetParam()};
  }
};

// Integers whose float16 / cbfloat16 values need a lo part (9 significant bits: bf16 keeps 8),
// small enough that every partial sum of a 32-term product is an exact float32 integer. Then
// the sum is exact in any order, and every route must give the exact result bit for bit.
std::vector<float> exact_sum_values(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> mag(256, 511), sign(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(sign(rng) ? mag(rng) : -mag(rng));
  return v;
}

// bf16(x), by the numerics codec (independent of the GEMM's own split).
double hi_of(double x) {
  float v = static_cast<float>(x);
  numerics::round_to_format(&v, 1, Format::bfloat16);
  return v;
}

// The exact result of a product of `passes` bf16 passes over the values: 4 (or a format of
// bf16 values), the plain product; 3, without the lo x lo terms; 1, the product of the bf16
// roundings (the parts by the numerics codec, independently of the GEMM's own split).
std::vector<double> exact_of_passes(const GemmShape& s, const std::vector<float>& a,
                                    const std::vector<float>& b, int passes) {
  if (passes == 4) return exact_product(s, a, b).value;
  std::vector<float> ah = a, bh = b, al = a, bl = b;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ah[i] = static_cast<float>(hi_of(a[i]));
    al[i] = a[i] - ah[i];
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    bh[i] = static_cast<float>(hi_of(b[i]));
    bl[i] = b[i] - bh[i];
  }
  std::vector<double> v = exact_product(s, ah, bh).value;
  if (passes == 3) {
    const std::vector<double> x = exact_product(s, ah, bl).value,
                              y = exact_product(s, al, bh).value;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += x[i] + y[i];
  }
  return v;
}

TEST_P(Bf16RouteTest, ExactSumsAreBitIdenticalToTheExactResult) {
  std::mt19937 rng(6);
  const GemmShape s = GemmShape::dense(20, 24, 32, false, true);
  for (Format f : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
    auto av = exact_sum_values(20 * 32, rng), bv = exact_sum_values(32 * 24, rng);
    if (f == Format::bfloat16) {  // bf16 values: 8 significant bits
      for (float& x : av) x = std::trunc(x / 2.0f);
      for (float& x : bv) x = std::trunc(x / 2.0f);
    }
    const Stored a = store(av, f), b = store(bv, f);
    for (int pol : {0, 1, 2}) {
      const int passes = precision::matmul_passes(f, pol);
      // The exact result of the passes asked for, in double: POL 0 all four products, POL 1
      // without lo*lo, POL 2 hi*hi only (bf16 values: the plain product).
      std::vector<double> want(20 * 24, 0.0);
      for (std::int64_t i = 0; i < 20; ++i) {
        for (std::int64_t j = 0; j < 24; ++j) {
          double acc = 0;
          for (std::int64_t p = 0; p < 32; ++p) {
            const double x = a.values[i * 32 + p], y = b.values[j * 32 + p];
            const double xh = hi_of(x), yh = hi_of(y), xl = x - xh, yl = y - yh;
            if (f == Format::bfloat16 || passes == 4) {
              acc += x * y;
            } else if (passes == 3) {
              acc += xh * yh + xh * yl + xl * yh;
            } else {
              acc += xh * yh;
            }
          }
          want[static_cast<std::size_t>(i * 24 + j)] = acc;
        }
      }
      std::vector<float> out(20 * 24), twin(20 * 24);
      gemm(s, a.operand(), b.operand(), out.data(), false, on(f, passes));
      gemm_bf16_ref(s, a.operand(), b.operand(), twin.data(), false, on(f, passes));
      for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(static_cast<double>(out[i]), want[i]) << numerics::name(f) << " POL " << pol;
        ASSERT_EQ(static_cast<double>(twin[i]), want[i]) << "twin, " << numerics::name(f);
      }
    }
  }
}

TEST_P(Bf16RouteTest, RandomProductsStayWithinTheDerivedBound) {
  std::mt19937 rng(7);
  for (Format f : {Format::bfloat16, Format::float16, Format::cbfloat16, Format::float8_e4m3}) {
    for (const Case& c : {Case{64, 48, 200, false, false}, Case{33, 70, 96, true, true},
                          Case{50, 20, 131, false, true}}) {
      const GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
      const Stored a = store(random_values(static_cast<std::size_t>(c.m * c.k), rng), f);
      const Stored b = store(random_values(static_cast<std::size_t>(c.k * c.n), rng), f);
      const Exact e = exact_product(s, a.values, b.values);
      for (int pol : {0, 1, 2}) {
        const int passes = precision::matmul_passes(f, pol);
        const bool split = f == Format::float16 || f == Format::cbfloat16;
        const double extra = !split || pol == 0 ? 0.0
                             : pol == 1         ? std::ldexp(1.0, -16)
                                                : 2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16);
        std::vector<float> out(static_cast<std::size_t>(c.m * c.n), 7.0f);
        gemm(s, a.operand(), b.operand(), out.data(), false, on(f, passes));
        for (std::size_t i = 0; i < out.size(); ++i) {
          const double bound = fp32_bound(passes * c.k, e.abs_sum[i]) + extra * e.abs_sum[i];
          ASSERT_LE(std::fabs(out[i] - e.value[i]), bound)
              << numerics::name(f) << " POL " << pol << " element " << i;
        }
      }
    }
  }
}

TEST_P(Bf16RouteTest, ManyRowBlocksFromTransposedStridedOperandsAreExact) {
  // More rows than one block of either route, A transposed and strided, B strided and either
  // way round: bfloat16 goes in as stored, float16 through the split passes (4) or rounded
  // to bfloat16 in one pass (POL 2: the product of the bf16 roundings), fp8 values in one
  // pass; exact sums, so exact results.
  std::mt19937 rng(9);
  struct Run {
    Format f;
    int passes;
    bool trans_b;
  };
  for (const Run& run : {Run{Format::bfloat16, 4, false}, Run{Format::float16, 4, false},
                         Run{Format::float16, 1, false}, Run{Format::float16, 1, true},
                         Run{Format::float16, 3, true}, Run{Format::float8_e4m3, 1, true}}) {
    const Format f = run.f;
    const std::int64_t m = 1100, n = 20, k = 32;
    const GemmShape s{m, n, k, true, run.trans_b, m + 3, run.trans_b ? k + 5 : n + 5, n};
    auto av = exact_sum_values(static_cast<std::size_t>(k * (m + 3)), rng);
    auto bv =
        exact_sum_values(static_cast<std::size_t>(run.trans_b ? n * (k + 5) : k * (n + 5)), rng);
    if (f != Format::float16) {
      for (float& x : av) x = std::trunc(x / 2.0f);
      for (float& x : bv) x = std::trunc(x / 2.0f);
    }
    if (f == Format::float8_e4m3) {  // integers of at most 4 significant bits: e4m3 values
      for (auto* v : {&av, &bv}) {
        for (float& x : *v) x = std::fmod(x, 16.0f);
      }
    }
    const Stored a = store(av, f), b = store(bv, f);
    std::vector<float> out(static_cast<std::size_t>(m * n), 7.0f);
    gemm(s, a.operand(), b.operand(), out.data(), false, on(f, run.passes));
    const std::vector<double> want = exact_of_passes(s, a.values, b.values, run.passes);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(static_cast<double>(out[i]), want[i])
          << numerics::name(f) << ", " << run.passes << " passes, element " << i;
    }
  }
}

TEST_P(Bf16RouteTest, ANaNInARowOfAMakesThatRowNaNAndNoOther) {
  // A NaN of A (row 3, depth 7), whichever way A is stored, in every pass count: that row of
  // C is NaN (the NaN's hi is a NaN; its lo 0, which times finite values adds 0), the other
  // rows exact.
  std::mt19937 rng(10);
  struct Run {
    Format f;
    int passes;
    bool trans_a;
  };
  for (const Run& run : {Run{Format::float16, 1, false}, Run{Format::float16, 3, true},
                         Run{Format::float16, 4, false}, Run{Format::bfloat16, 1, true},
                         Run{Format::float8_e4m3, 1, false}}) {
    const std::int64_t m = 12, n = 10, k = 16;
    const GemmShape s = GemmShape::dense(m, n, k, run.trans_a, false);
    auto av = exact_sum_values(static_cast<std::size_t>(m * k), rng);
    auto bv = exact_sum_values(static_cast<std::size_t>(k * n), rng);
    for (auto* v : {&av, &bv}) {
      for (float& x : *v) x = run.f == Format::float16 ? x : std::fmod(std::trunc(x / 2.0f), 16.0f);
    }
    av[static_cast<std::size_t>(run.trans_a ? 7 * m + 3 : 3 * k + 7)] = NAN;
    const Stored a = store(av, run.f), b = store(bv, run.f);
    std::vector<float> out(static_cast<std::size_t>(m * n));
    gemm(s, a.operand(), b.operand(), out.data(), false, on(run.f, run.passes));
    std::vector<float> finite = a.values;
    finite[static_cast<std::size_t>(run.trans_a ? 7 * m + 3 : 3 * k + 7)] = 0.0f;
    const std::vector<double> want = exact_of_passes(s, finite, b.values, run.passes);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const float got = out[static_cast<std::size_t>(i * n + j)];
        if (i == 3) {
          ASSERT_TRUE(std::isnan(got))
              << numerics::name(run.f) << ", " << run.passes << " passes, column " << j;
        } else {
          ASSERT_EQ(static_cast<double>(got), want[static_cast<std::size_t>(i * n + j)])
              << numerics::name(run.f) << ", " << run.passes << " passes, (" << i << ", " << j
              << ")";
        }
      }
    }
  }
}

TEST_P(Bf16RouteTest, InThreadCallsFromAParallelRegionAreCorrect) {
  std::mt19937 rng(8);
  const int tasks = 8;
  const GemmShape s = GemmShape::dense(16, 24, 40);
  std::vector<Stored> as, bs;
  for (int t = 0; t < tasks; ++t) {
    as.push_back(store(exact_sum_values(16 * 40, rng), Format::float16));
    bs.push_back(store(exact_sum_values(40 * 24, rng), Format::float16));
  }
  std::vector<std::vector<float>> out(tasks, std::vector<float>(16 * 24));
#pragma omp parallel for
  for (int t = 0; t < tasks; ++t) {
    gemm_in_thread(s, as[t].operand(), bs[t].operand(), out[t].data(), false,
                   on(Format::float16, 4));
  }
  for (int t = 0; t < tasks; ++t) {
    const Exact e = exact_product(s, as[t].values, bs[t].values);
    for (std::size_t i = 0; i < e.value.size(); ++i) ASSERT_EQ(out[t][i], e.value[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, Bf16RouteTest,
                         ::testing::Values(GemmRoute::bf16, GemmRoute::onednn_bf16, GemmRoute::amx),
                         [](const auto& info) { return std::string(route_name(info.param)); });

// --- mantissa's bf16 route against its scalar twin, and the twin against hand-derived sums --

TEST(GemmBf16Ref, SumsEachPairOddDepthFirstWithOneRoundingPerProduct) {
  // Depths 0..3 with products 2^-24, 1, -1, 2^-24: the dot instruction takes them in the
  // order 1, 0, 3, 2, the fp32 route's chain in the order 0, 1, 2, 3.
  const float a[4] = {std::ldexp(1.0f, -24), 1.0f, -1.0f, std::ldexp(1.0f, -24)};
  const float b[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const GemmShape s = GemmShape::dense(1, 1, 4);
  const GemmPrecision bf{Format::bfloat16, 1};
  float pairs = -1.0f, chain = -1.0f;
  gemm_bf16_ref(s, a, b, &pairs, false, bf);
  gemm_ref(s, a, b, &chain, false, bf);
  // Pairs: 1, + 2^-24 -> 1 (tie to even), + 2^-24 (depth 3) -> 1, + (-1) (depth 2) -> 0.
  EXPECT_EQ(pairs, 0.0f);
  // k order: 2^-24 + 1 -> 1, - 1 -> 0, + 2^-24 -> 2^-24.
  EXPECT_EQ(chain, std::ldexp(1.0f, -24));
  // An odd depth count pairs the last element with a zero.
  float odd = -1.0f;
  gemm_bf16_ref(GemmShape::dense(1, 1, 3), a, b, &odd, false, bf);
  EXPECT_EQ(odd, 0.0f);  // 1, + 2^-24 -> 1, + 0, - 1 -> 0
}

TEST(GemmBf16Ref, FlushesSubnormalInputsAndSums) {
  // 2^-100 * 2^-30 = 2^-130 is a float32 subnormal: flushed to 0 (the fp32 chain keeps it).
  const float a[2] = {std::ldexp(1.0f, -100), 0.0f};
  const float b[2] = {std::ldexp(1.0f, -30), 0.0f};
  float pairs = -1.0f, chain = -1.0f;
  const GemmPrecision bf{Format::bfloat16, 1};
  gemm_bf16_ref(GemmShape::dense(1, 1, 2), a, b, &pairs, false, bf);
  gemm_ref(GemmShape::dense(1, 1, 2), a, b, &chain, false, bf);
  EXPECT_EQ(pairs, 0.0f);
  EXPECT_EQ(chain, std::ldexp(1.0f, -130));
  // A subnormal bfloat16 input reads as zero: 2^-130 * 2^100 would be 2^-30.
  const float c[2] = {std::ldexp(1.0f, -130), 0.0f};
  const float d[2] = {std::ldexp(1.0f, 100), 0.0f};
  gemm_bf16_ref(GemmShape::dense(1, 1, 2), c, d, &pairs, false, bf);
  EXPECT_EQ(pairs, 0.0f);
  EXPECT_THROW(gemm_bf16_ref(GemmShape::dense(1, 1, 2), a, b, &pairs, false, {}), Error);
}

class Bf16KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = route_unavailable(GemmRoute::bf16, Format::bfloat16);
    if (!why.empty()) GTEST_SKIP() << "skip: the AVX512-BF16 micro-kernel not run: " << why;
  }
};

TEST_F(Bf16KernelTest, MatchesTheScalarTwinBitForBitOnEveryShapeFormatPassAndThreadCount) {
  std::mt19937 rng(12);
  for (Format f : numerics::kTensorFormats) {
    if (f == Format::float32) continue;
    const bool split = f == Format::float16 || f == Format::cbfloat16;
    for (int passes : split ? std::vector<int>{1, 3, 4} : std::vector<int>{1}) {
      expect_route_matches_twin(gemm_bf16_ref,
                                {f, passes, GemmAlgorithm::automatic, GemmRoute::bf16}, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_F(Bf16KernelTest, ManyThreadsMatchTheTwin) {
  expect_many_threads_match_twin(gemm_bf16_ref,
                                 {Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::bf16});
}

TEST_F(Bf16KernelTest, PairOrderHoldsInEveryLane) {
  // The hand-derived sum of GemmBf16Ref.SumsEachPairOddDepthFirst... in every lane.
  const std::int64_t m = 13, n = 37, k = 4;
  std::vector<float> a(m * k), b(k * n, 1.0f), c(m * n);
  for (std::int64_t i = 0; i < m; ++i) {
    a[i * k] = std::ldexp(1.0f, -24);
    a[i * k + 1] = 1.0f;
    a[i * k + 2] = -1.0f;
    a[i * k + 3] = std::ldexp(1.0f, -24);
  }
  const Stored as = store(a, Format::bfloat16), bs = store(b, Format::bfloat16);
  gemm(GemmShape::dense(m, n, k), as.operand(), bs.operand(), c.data(), false,
       {Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::bf16});
  for (float v : c) ASSERT_EQ(v, 0.0f);
}

// --- mantissa's amx route against its scalar twin, and the twin against hand-derived sums ---

TEST(GemmAmxRef, EvenAndOddDepthsSumApartInChunksOf32) {
  // Depths 0..3 with products 2^24, -2^24, 1, 1: the even depths (0, 2) and the odd ones (1, 3)
  // are two chains: 2^24 + 1 -> 2^24 (a tie, to even), and -2^24 + 1 = -(2^24 - 1), exact;
  // then their sum, 1. The dot instruction's order (1, 0, 3, 2) gives -2^24 + 2^24 + 1 + 1 = 2.
  const float big = 16777216.0f;
  const float a[4] = {big, -big, 1.0f, 1.0f};
  const float b[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const GemmPrecision bf{Format::bfloat16, 1};
  float amx = -1.0f, pairs = -1.0f;
  gemm_amx_ref(GemmShape::dense(1, 1, 4), a, b, &amx, false, bf);
  gemm_bf16_ref(GemmShape::dense(1, 1, 4), a, b, &pairs, false, bf);
  EXPECT_EQ(amx, 1.0f);
  EXPECT_EQ(pairs, 2.0f);
  // Chunks of 32 depths meet the accumulator one at a time: 2^24 from depth 0, then depths 32
  // and 33 (the second chunk: chains 1 and 1, sum 2) give 2^24 + 2 exactly. Taken as one
  // chunk, the even chain would round 2^24 + 1 back to 2^24 and the result be 2^24.
  std::vector<float> x(34, 0.0f), y(34, 1.0f);
  x[0] = big;
  x[32] = x[33] = 1.0f;
  float chunks = 0.0f;
  gemm_amx_ref(GemmShape::dense(1, 1, 34), x.data(), y.data(), &chunks, false, bf);
  EXPECT_EQ(chunks, big + 2.0f);
  EXPECT_THROW(gemm_amx_ref(GemmShape::dense(1, 1, 4), a, b, &amx, false, {}), Error);
}

class AmxKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = route_unavailable(GemmRoute::amx, Format::bfloat16);
    if (!why.empty()) GTEST_SKIP() << "skip: the AMX micro-kernel not run: " << why;
  }
};

TEST_F(AmxKernelTest, MatchesTheScalarTwinBitForBitOnEveryShapeFormatPassAndThreadCount) {
  std::mt19937 rng(13);
  for (Format f : numerics::kTensorFormats) {
    if (f == Format::float32) continue;
    const bool split = f == Format::float16 || f == Format::cbfloat16;
    for (int passes : split ? std::vector<int>{1, 3, 4} : std::vector<int>{1}) {
      expect_route_matches_twin(gemm_amx_ref, {f, passes, GemmAlgorithm::automatic, GemmRoute::amx},
                                rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_F(AmxKernelTest, ManyThreadsMatchTheTwin) {
  expect_many_threads_match_twin(gemm_amx_ref,
                                 {Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::amx});
}

TEST_F(AmxKernelTest, DeepProductsSplitIntoDepthBlocksMatchTheTwin) {
  // Depths past one block (512) and not a multiple of the chunk, many row and column blocks.
  std::mt19937 rng(14);
  for (std::int64_t k : {600, 1100}) {
    const GemmShape s = GemmShape::dense(70, 90, k, true, false);
    const Stored a = store(random_values(static_cast<std::size_t>(70 * k), rng), Format::bfloat16);
    const Stored b = store(random_values(static_cast<std::size_t>(90 * k), rng), Format::bfloat16);
    std::vector<float> ref(70 * 90), out(70 * 90);
    const GemmPrecision p{Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::amx};
    gemm_amx_ref(s, a.operand(), b.operand(), ref.data(), false, p);
    gemm(s, a.operand(), b.operand(), out.data(), false, p);
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits(out[i]), bits(ref[i])) << k << " " << i;
  }
}

TEST_F(AmxKernelTest, PanelsPackedAcrossAndOddLayoutsMatchTheTwin) {
  // The linear layers' shapes with B's panels packed across its depth rows (B not transposed)
  // and beside them transposed B, odd leading dimensions, A starting at an odd element, rows
  // past the last block of 32 and depths not a multiple of 32.
  std::mt19937 rng(16);
  struct Shape {
    std::int64_t m, n, k, lda;
    bool ta, tb;
    std::int64_t a_offset;
  };
  for (const Shape& c :
       {Shape{96, 64, 384, 384, false, true, 0}, Shape{64, 96, 1152, 1152, false, false, 0},
        Shape{96, 40, 416, 418, false, false, 0}, Shape{64, 33, 384, 385, false, true, 0},
        Shape{64, 50, 384, 384, false, false, 1}, Shape{70, 48, 384, 384, false, false, 0},
        Shape{64, 48, 100, 100, false, false, 0}}) {
    GemmShape s = GemmShape::dense(c.m, c.n, c.k, c.ta, c.tb);
    s.lda = c.lda;
    const Stored a = store(random_values(static_cast<std::size_t>(c.m * c.lda + c.a_offset), rng),
                           Format::bfloat16);
    const Stored b =
        store(random_values(static_cast<std::size_t>(c.k * c.n), rng), Format::bfloat16);
    const Operand a_op(static_cast<const std::uint16_t*>(a.operand().data) + c.a_offset,
                       Format::bfloat16);
    std::vector<float> ref(static_cast<std::size_t>(c.m * c.n), 0.5f), out = ref;
    const GemmPrecision p{Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::amx};
    for (bool accumulate : {false, true}) {
      gemm_amx_ref(s, a_op, b.operand(), ref.data(), accumulate, p);
      gemm(s, a_op, b.operand(), out.data(), accumulate, p);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(bits(out[i]), bits(ref[i])) << c.m << "x" << c.n << "x" << c.k << " lda " << c.lda
                                              << " offset " << c.a_offset << " element " << i;
      }
    }
  }
}

TEST(GemmRoutes, OnednnFp32TakesEveryFormatStoredEitherWayExactly) {
  // oneDNN's fp32 matmul on operands decoded in their own layout: more rows than a block,
  // A transposed or not, B either way, strided; POL 2 rounds float16 / cbfloat16 to bf16 (the
  // product of the roundings), everything else multiplies the values as stored. Exact sums.
  std::mt19937 rng(15);
  for (Format f : {Format::float16, Format::cbfloat16, Format::bfloat16, Format::float8_e4m3}) {
    for (int pol : {1, 2}) {
      for (const auto& [ta, tb] : {std::pair{false, false}, std::pair{true, true},
                                   std::pair{true, false}, std::pair{false, true}}) {
        const std::int64_t m = 530, n = 18, k = 24;
        const GemmShape s{m, n, k, ta, tb, (ta ? m : k) + 3, (tb ? k : n) + 2, n};
        auto av = exact_sum_values(static_cast<std::size_t>((ta ? k : m) * s.lda), rng);
        auto bv = exact_sum_values(static_cast<std::size_t>((tb ? n : k) * s.ldb), rng);
        for (auto* v : {&av, &bv}) {
          for (float& x : *v) {
            if (f == Format::bfloat16) x = std::trunc(x / 2.0f);
            if (f == Format::float8_e4m3) x = std::fmod(std::trunc(x / 2.0f), 16.0f);
          }
        }
        const Stored a = store(av, f), b = store(bv, f);
        const int passes = precision::matmul_passes(f, pol);
        std::vector<float> out(static_cast<std::size_t>(m * n));
        gemm(s, a.operand(), b.operand(), out.data(), false,
             {f, passes, GemmAlgorithm::automatic, GemmRoute::onednn_fp32});
        const bool rounds = pol == 2 && (f == Format::float16 || f == Format::cbfloat16);
        const std::vector<double> want = exact_of_passes(s, a.values, b.values, rounds ? 1 : 4);
        for (std::size_t i = 0; i < out.size(); ++i) {
          ASSERT_EQ(static_cast<double>(out[i]), want[i])
              << numerics::name(f) << " POL " << pol << (ta ? " A^T" : "") << (tb ? " B^T" : "")
              << " element " << i;
        }
      }
    }
  }
}

TEST(GemmRoutes, AvailabilityAndDescriptionsSayWhatThisCpuHas) {
  // float32 values run on the fp32 routes only; a bf16 route asked for them is not an error:
  // it applies to products of bf16 values.
  EXPECT_EQ(routes_for(Format::float32),
            (std::vector<GemmRoute>{GemmRoute::fp32, GemmRoute::onednn_fp32}));
  EXPECT_EQ(effective_preference(Format::float32, GemmRoute::bf16), GemmRoute::automatic);
  EXPECT_NO_THROW(check_route(Format::float32, GemmRoute::onednn_bf16));
  const bool dot = numerics::cpu_features().avx512_bf16;
  EXPECT_EQ(route_unavailable(GemmRoute::bf16, Format::bfloat16).empty(), dot);
  EXPECT_EQ(route_unavailable(GemmRoute::onednn_bf16, Format::float16).empty(),
            native_bf16().available);
  if (!dot) {
    EXPECT_THROW(check_route(Format::bfloat16, GemmRoute::bf16), Error);
  }
  const std::string d = describe_route(Format::float16, 1, GemmRoute::automatic);
  EXPECT_EQ(d.rfind("float16: automatic", 0), 0u) << d;
  EXPECT_NE(d.find("fp32"), std::string::npos) << d;
  EXPECT_EQ(parse_named(precision::kMatmulRouteNames, "onednn_bf16", "route"),
            GemmRoute::onednn_bf16);
  EXPECT_EQ(route_unavailable(GemmRoute::amx, Format::bfloat16).empty(), amx_available());
  EXPECT_EQ(parse_named(precision::kMatmulRouteNames, "amx", "precision.matmul_route"),
            GemmRoute::amx);
  EXPECT_THROW(parse_named(precision::kMatmulRouteNames, "tiles", "precision.matmul_route"), Error);
}

}  // namespace
}  // namespace mantissa::kernels
