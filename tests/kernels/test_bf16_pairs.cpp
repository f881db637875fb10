// The bf16 pair kernels (AVX512-BF16) against their scalar twins bit for bit, the twins
// against hand-derived results, and the fused bf16 attention heads built on them against the
// fp32 route and the double-precision reference.
#include "mantissa/kernels/bf16_pairs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mantissa/kernels/attention.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels {
namespace {

using numerics::Format;

std::uint16_t bf16_bits(float x) {  // x must be a bf16 value
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return static_cast<std::uint16_t>(b >> 16);
}

std::uint32_t pair_word(float lo, float hi) {
  return static_cast<std::uint32_t>(bf16_bits(lo)) | static_cast<std::uint32_t>(bf16_bits(hi))
                                                         << 16;
}

// Random bf16 words: normal values of both signs over a wide range, some zeros and some
// subnormals (which the instruction reads as zero).
std::vector<std::uint32_t> random_words(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 19), exponent(100, 150), mantissa(0, 127);
  auto half = [&]() -> std::uint32_t {
    const int kind = pick(rng);
    const std::uint32_t sign = (pick(rng) % 2) << 15;
    if (kind == 0) return sign;                                                  // zero
    if (kind == 1) return sign | static_cast<std::uint32_t>(mantissa(rng) | 1);  // subnormal
    return sign | static_cast<std::uint32_t>(exponent(rng)) << 7 |
           static_cast<std::uint32_t>(mantissa(rng));
  };
  std::vector<std::uint32_t> w(n);
  for (auto& x : w) x = half() | half() << 16;
  return w;
}

TEST(Bf16Pairs, TwinRoundsEachStepInTheInstructionsOrder) {
  // Hand-derived: c = 2^24, then + 1 (high pair) rounds to 2^24 (a tie, to even), then + 1
  // again: 2^24, where the exact sum 2^24 + 2 is a float32 value.
  const std::uint32_t a = pair_word(1.0f, 1.0f), b = pair_word(1.0f, 1.0f);
  float c = 16777216.0f;
  bf16_pair_product_ref(1, 1, 1, {&a, 1, 1}, {&b, 1}, &c, 1, true);
  EXPECT_EQ(c, 16777216.0f);
  // The high half first: 1 + (-1) = 0, then + 2^-30 gives 2^-30; low first would lose
  // 2^-30 against 1 and give 0.
  const std::uint32_t a2 = pair_word(std::ldexp(1.0f, -15), -1.0f),
                      b2 = pair_word(std::ldexp(1.0f, -15), 1.0f);
  float c2 = 1.0f;
  bf16_pair_product_ref(1, 1, 1, {&a2, 1, 1}, {&b2, 1}, &c2, 1, true);
  EXPECT_EQ(c2, std::ldexp(1.0f, -30));
  // A subnormal bf16 input is read as zero: 2^-130 * 2^100 would be 2^-30.
  const std::uint32_t sub = 0x0001u, big = pair_word(std::ldexp(1.0f, 100), 0.0f);
  float c3 = 5.0f;
  bf16_pair_product_ref(1, 1, 1, {&sub, 1, 1}, {&big, 1}, &c3, 1, false);
  EXPECT_EQ(c3, 0.0f);
  // Small integers: every step exact, so the result is the exact dot product.
  std::vector<std::uint32_t> x(5), y(5);
  double want = 0;
  for (int p = 0; p < 5; ++p) {
    const float u0 = static_cast<float>(p + 1), u1 = static_cast<float>(-2 * p),
                v0 = static_cast<float>(3 - p), v1 = static_cast<float>(p * p);
    x[p] = pair_word(u0, u1);
    y[p] = pair_word(v0, v1);
    want += static_cast<double>(u0) * v0 + static_cast<double>(u1) * v1;
  }
  float c4 = 0;
  bf16_pair_product_ref(1, 1, 5, {x.data(), 5, 1}, {y.data(), 1}, &c4, 1, false);
  EXPECT_EQ(c4, static_cast<float>(want));
}

TEST(Bf16Pairs, ProductMatchesTwinBitForBit) {
  if (!bf16_pairs_available()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the pair kernels";
  struct Case {
    std::int64_t m, n, pairs;
  };
  for (const Case cs : {Case{1, 1, 1}, Case{6, 64, 32}, Case{13, 71, 37}, Case{64, 130, 5},
                        Case{7, 200, 96}, Case{3, 17, 0}}) {
    for (const bool pair_major : {false, true}) {
      for (const bool accumulate : {false, true}) {
        const auto a = random_words(static_cast<std::size_t>(cs.m * cs.pairs + 1), 1);
        const std::int64_t ldb = cs.n + 3, ldc = cs.n + 5;
        const auto b = random_words(static_cast<std::size_t>(cs.pairs * ldb + 1), 2);
        const PairRows pa =
            pair_major ? PairRows{a.data(), 1, cs.m} : PairRows{a.data(), cs.pairs, 1};
        std::vector<float> c(static_cast<std::size_t>(cs.m * ldc));
        std::mt19937 rng(3);
        std::normal_distribution<float> d(0.0f, 1e3f);
        for (float& x : c) x = d(rng);
        auto want = c;
        bf16_pair_product(cs.m, cs.n, cs.pairs, pa, {b.data(), ldb}, c.data(), ldc, accumulate);
        bf16_pair_product_ref(cs.m, cs.n, cs.pairs, pa, {b.data(), ldb}, want.data(), ldc,
                              accumulate);
        for (std::size_t i = 0; i < c.size(); ++i) {
          ASSERT_EQ(std::memcmp(&c[i], &want[i], sizeof(float)), 0)
              << cs.m << "x" << cs.n << "x" << cs.pairs << " pair_major " << pair_major
              << " accumulate " << accumulate << " element " << i << ": " << c[i] << " vs "
              << want[i];
        }
      }
    }
  }
}

TEST(Bf16Pairs, BandedProductsKeepTheWholeProductsEntries) {
  // A band skips terms whose factor from a is zero (pairs_below, pairs_from) or columns a row
  // does not need (columns_below): a is made zero where the band says, then every entry the
  // band keeps must be the whole product's bit for bit (the twin's, without a band), on the
  // AVX-512 kernel and on the twin with the band; an entry outside it is either untouched or
  // the whole product's.
  if (!bf16_pairs_available()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the pair kernels";
  using Kind = PairBand::Kind;
  struct Case {
    std::int64_t m, n, pairs;
  };
  for (const Kind kind : {Kind::columns_below, Kind::pairs_below, Kind::pairs_from}) {
    for (const std::int64_t offset : {-3, 0, 1, 5, 64, 200}) {
      for (const Case cs :
           {Case{64, 128, 32}, Case{13, 71, 37}, Case{64, 64, 64}, Case{7, 200, 96}}) {
        for (const bool pair_major : {false, true}) {
          for (const bool accumulate : {false, true}) {
            auto a = random_words(static_cast<std::size_t>(cs.m * cs.pairs), 11);
            const PairRows pa =
                pair_major ? PairRows{a.data(), 1, cs.m} : PairRows{a.data(), cs.pairs, 1};
            for (std::int64_t i = 0; i < cs.m; ++i) {
              for (std::int64_t e = 0; e < 2 * cs.pairs; ++e) {
                const bool zero = (kind == Kind::pairs_below && e >= i + offset) ||
                                  (kind == Kind::pairs_from && e < i - offset);
                if (!zero) continue;
                std::uint32_t& w =
                    a[static_cast<std::size_t>(i * pa.row_stride + e / 2 * pa.pair_stride)];
                w &= e % 2 == 0 ? 0xFFFF0000u : 0x0000FFFFu;
              }
            }
            const std::int64_t ldb = cs.n + 1, ldc = cs.n + 2;
            const auto b = random_words(static_cast<std::size_t>(cs.pairs * ldb), 12);
            std::vector<float> c0(static_cast<std::size_t>(cs.m * ldc));
            std::mt19937 rng(13);
            std::normal_distribution<float> d(0.0f, 1e3f);
            for (float& x : c0) x = d(rng);
            auto fast = c0, whole = c0, twin = c0;
            const PairBand band{kind, offset};
            bf16_pair_product(cs.m, cs.n, cs.pairs, pa, {b.data(), ldb}, fast.data(), ldc,
                              accumulate, band);
            bf16_pair_product_ref(cs.m, cs.n, cs.pairs, pa, {b.data(), ldb}, whole.data(), ldc,
                                  accumulate);
            bf16_pair_product_ref(cs.m, cs.n, cs.pairs, pa, {b.data(), ldb}, twin.data(), ldc,
                                  accumulate, band);
            const auto same = [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; };
            for (std::int64_t i = 0; i < cs.m; ++i) {
              for (std::int64_t j = 0; j < cs.n; ++j) {
                const auto at = static_cast<std::size_t>(i * ldc + j);
                const bool kept = kind != Kind::columns_below || j < i + offset;
                const std::string where =
                    "kind " + std::to_string(static_cast<int>(kind)) + " offset " +
                    std::to_string(offset) + " " + std::to_string(cs.m) + "x" +
                    std::to_string(cs.n) + "x" + std::to_string(cs.pairs) + " pair_major " +
                    std::to_string(pair_major) + " accumulate " + std::to_string(accumulate) +
                    " row " + std::to_string(i) + " column " + std::to_string(j);
                if (kept) {
                  ASSERT_TRUE(same(fast[at], whole[at]))
                      << where << ": " << fast[at] << " vs " << whole[at];
                  ASSERT_TRUE(same(twin[at], whole[at])) << where << " (twin)";
                } else {
                  ASSERT_TRUE(same(fast[at], whole[at]) || same(fast[at], c0[at])) << where;
                  ASSERT_TRUE(same(twin[at], c0[at])) << where << " (twin writes only the band)";
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(Bf16Pairs, RowsToBf16MatchTheEncoder) {
  // Ties (even and odd), NaN, infinities, subnormals, the largest value that rounds up to inf.
  std::vector<float> special = {0.0f,
                                -0.0f,
                                1.0f + std::ldexp(1.0f, -8),
                                1.0f + 3 * std::ldexp(1.0f, -8),
                                std::numeric_limits<float>::quiet_NaN(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::denorm_min(),
                                std::ldexp(1.0f, -130),
                                std::numeric_limits<float>::max(),
                                -3.14159f};
  std::uint32_t snan_bits = 0x7F800001u;  // a signalling NaN: made quiet, not infinity
  float snan;
  std::memcpy(&snan, &snan_bits, sizeof(snan));
  special.push_back(snan);
  std::mt19937 rng(4);
  std::normal_distribution<float> d(0.0f, 10.0f);
  for (const std::int64_t n :
       {std::int64_t{1}, std::int64_t{31}, std::int64_t{32}, std::int64_t{33}, std::int64_t{77}}) {
    const std::int64_t rows = 5, ldx = n + 2, ldo = n + 1 + (n % 2) + 4;
    std::vector<float> x(static_cast<std::size_t>(rows * ldx));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = i < special.size() ? special[i] : d(rng);
    std::vector<std::uint16_t> got(static_cast<std::size_t>(rows * ldo), 0xAAAA);
    to_bf16_rows(x.data(), rows, n, ldx, got.data(), ldo);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<std::uint16_t> want(static_cast<std::size_t>(n));
      numerics::encode_array(x.data() + r * ldx, static_cast<std::size_t>(n), Format::bfloat16,
                             want.data());
      for (std::int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(got[r * ldo + j], want[j]) << "row " << r << " column " << j << " n " << n;
      }
      if (n % 2 != 0) {
        EXPECT_EQ(got[r * ldo + n], 0) << "padding of row " << r;
      }
      EXPECT_EQ(got[r * ldo + n + (n % 2)], 0xAAAA) << "wrote past the row";
    }
  }
}

TEST(Bf16Pairs, InterleavedRowPairsMatchTwin) {
  for (const std::int64_t rows : {1, 2, 7, 64}) {
    for (const std::int64_t n : {1, 15, 16, 33, 100}) {
      const std::int64_t ldx = n + 3, ldo = n + 2;
      std::vector<std::uint16_t> x(static_cast<std::size_t>(rows * ldx));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint16_t>(i * 2654435761u);
      const std::size_t words = static_cast<std::size_t>((rows + 1) / 2 * ldo);
      std::vector<std::uint32_t> got(words, 7), want(words, 7);
      interleave_row_pairs(x.data(), rows, n, ldx, got.data(), ldo);
      interleave_row_pairs_ref(x.data(), rows, n, ldx, want.data(), ldo);
      ASSERT_EQ(got, want) << rows << " rows of " << n;
      // Hand-derived: word (p, j) holds row 2p low, row 2p + 1 high (zero past the last row).
      const std::int64_t p = (rows - 1) / 2, j = n - 1;
      const std::uint32_t hi = 2 * p + 1 < rows ? x[(2 * p + 1) * ldx + j] : 0u;
      EXPECT_EQ(want[p * ldo + j], x[2 * p * ldx + j] | hi << 16);
    }
  }
}

std::vector<float> bf16_values(std::size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  numerics::round_to_format(v.data(), n, Format::bfloat16);
  return v;
}

AttentionPrecision bf16_attention(MatmulRoute route) {
  AttentionPrecision pr;
  pr.half = Format::bfloat16;
  pr.gemm.format = Format::bfloat16;
  pr.gemm.passes = 1;
  pr.gemm.route = route;
  return pr;
}

// Both routes read the same bf16 values and round probabilities and score gradients to bf16
// the same way; they differ only in how float32 sums are ordered and rounded (the bf16 route
// rounds every step). Each sum has at most `terms` products: its error is within
// terms * 2^-23 * (sum of |products|) on either side; `magnitude` bounds that sum.
void expect_within_sums(const std::vector<float>& got, const std::vector<float>& want, double terms,
                        double magnitude, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  const double bound = 2 * terms * std::ldexp(1.0, -23) * magnitude;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], bound) << what << " element " << i;
  }
}

// The fused heads on each unit: the AVX512-BF16 dot instruction (route bf16) and AMX tiles
// (route amx), each where this CPU has it.
class FusedHeads : public ::testing::TestWithParam<MatmulRoute> {
 protected:
  void SetUp() override {
    const std::string why = route_unavailable(GetParam(), Format::bfloat16);
    if (!why.empty()) {
      GTEST_SKIP() << "skip: fused heads on route " << route_name(GetParam()) << ": " << why;
    }
  }
};

TEST_P(FusedHeads, MatchTheFp32Route) {
  for (const std::int64_t t : {1, 63, 70, 200}) {
    for (const std::int64_t d : {8, 64}) {
      const std::int64_t bh = 3;
      const std::size_t n = static_cast<std::size_t>(bh * t * d);
      const auto q = bf16_values(n, 5, 1.0f), k = bf16_values(n, 6, 1.0f),
                 v = bf16_values(n, 7, 1.0f), d_o = bf16_values(n, 8, 1.0f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(d));
      std::vector<float> o_pair(n), o_fp32(n), lse_pair(bh * t), lse_fp32(bh * t);
      const auto pairs = bf16_attention(GetParam()), fp32 = bf16_attention(MatmulRoute::fp32);
      attention_forward(q.data(), k.data(), v.data(), o_pair.data(), lse_pair.data(), bh, t, d,
                        scale, pairs);
      attention_forward(q.data(), k.data(), v.data(), o_fp32.data(), lse_fp32.data(), bh, t, d,
                        scale, fp32);
      // Scores: d terms of |q||k| ~ 1 each (5 sigma: 25); outputs: t terms of p |v| <= 5.
      expect_within_sums(lse_pair, lse_fp32, static_cast<double>(d), 25.0 * d * scale + 1, "lse");
      expect_within_sums(o_pair, o_fp32, static_cast<double>(t + d), 64.0, "o");
      std::vector<float> dq(n), dk(n), dv(n), dq2(n), dk2(n), dv2(n);
      attention_backward(q.data(), k.data(), v.data(), o_fp32.data(), lse_fp32.data(), d_o.data(),
                         dq.data(), dk.data(), dv.data(), bh, t, d, scale, pairs);
      attention_backward(q.data(), k.data(), v.data(), o_fp32.data(), lse_fp32.data(), d_o.data(),
                         dq2.data(), dk2.data(), dv2.data(), bh, t, d, scale, fp32);
      // Gradients: sums of t products of (probability or score gradient) x (value <= 5)
      // after a d-term dP; loose magnitude bounds, far below the values' spread (~1).
      expect_within_sums(dv, dv2, static_cast<double>(t + d), 64.0, "dv");
      expect_within_sums(dq, dq2, static_cast<double>(t + d), 256.0, "dq");
      expect_within_sums(dk, dk2, static_cast<double>(t + d), 256.0, "dk");
    }
  }
}

TEST_P(FusedHeads, ReadStoredBf16AsTheSameValues) {
  // q, k, v as column thirds of [b, t, 3c] rows and dO as [b, t, c], stored once as bfloat16
  // bits (read in place) and once as float32 holding the same values (converted per head):
  // the same values reach the same kernels, so every result is the same bit for bit.
  const std::int64_t b = 2, heads = 3, t = 70, d = 16, c = heads * d;
  const AttentionShape s{b, heads, t, d};
  const auto qkv = bf16_values(static_cast<std::size_t>(b * t * 3 * c), 12, 1.0f);
  const auto g = bf16_values(static_cast<std::size_t>(b * t * c), 13, 1.0f);
  std::vector<std::uint16_t> qkv_bits(qkv.size()), g_bits(g.size());
  numerics::encode_array(qkv.data(), qkv.size(), Format::bfloat16, qkv_bits.data());
  numerics::encode_array(g.data(), g.size(), Format::bfloat16, g_bits.data());
  const HeadLayout in = HeadLayout::interleaved(s, 3 * c), out = HeadLayout::interleaved(s, c);
  const auto pr = bf16_attention(GetParam());
  const float scale = 0.25f;
  struct Results {
    std::vector<float> o, lse, dq, dk, dv;
  };
  auto run = [&](const void* x, const void* dy, Format f) {
    Results r{std::vector<float>(g.size()), std::vector<float>(b * heads * t),
              std::vector<float>(qkv.size()), std::vector<float>(qkv.size()),
              std::vector<float>(qkv.size())};
    const int bytes = numerics::traits(f).storage_bytes;
    auto col = [&](std::int64_t offset) {
      return Operand{static_cast<const char*>(x) + offset * bytes, f};
    };
    attention_forward(s, in, col(0), col(c), col(2 * c), out, {r.o.data(), Format::float32},
                      r.lse.data(), scale, pr);
    attention_backward(s, in, col(0), col(c), col(2 * c), out, {r.o.data(), Format::float32},
                       {dy, f}, r.lse.data(), {r.dq.data(), r.dk.data(), r.dv.data()}, scale, pr);
    return r;
  };
  const Results stored = run(qkv_bits.data(), g_bits.data(), Format::bfloat16);
  const Results floats = run(qkv.data(), g.data(), Format::float32);
  EXPECT_EQ(stored.o, floats.o);
  EXPECT_EQ(stored.lse, floats.lse);
  EXPECT_EQ(stored.dq, floats.dq);
  EXPECT_EQ(stored.dk, floats.dk);
  EXPECT_EQ(stored.dv, floats.dv);

  // The gradients asked for in bfloat16, into one [b, t, 3c] tensor as the fused op makes
  // them: the float32 gradients rounded to nearest even, and nothing written outside them.
  std::vector<float> o(g.size()), lse(static_cast<std::size_t>(b * heads * t));
  attention_forward(s, in, Operand{qkv_bits.data(), Format::bfloat16},
                    Operand{qkv_bits.data() + c, Format::bfloat16},
                    Operand{qkv_bits.data() + 2 * c, Format::bfloat16}, out,
                    {o.data(), Format::float32}, lse.data(), scale, pr);
  std::vector<std::uint16_t> grads(qkv.size(), 0x7777);
  attention_backward(s, in, Operand{qkv_bits.data(), Format::bfloat16},
                     Operand{qkv_bits.data() + c, Format::bfloat16},
                     Operand{qkv_bits.data() + 2 * c, Format::bfloat16}, out,
                     {o.data(), Format::float32}, {g_bits.data(), Format::bfloat16}, lse.data(),
                     {grads.data(), grads.data() + c, grads.data() + 2 * c, Format::bfloat16},
                     scale, pr);
  // dq, dk, dv interleaved as the fused gradient holds them (run() wrote each at q's offsets).
  std::vector<float> want(qkv.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::size_t third = i % static_cast<std::size_t>(3 * c) / static_cast<std::size_t>(c);
    const std::size_t at = i - third * static_cast<std::size_t>(c);
    want[i] = (third == 0 ? stored.dq : third == 1 ? stored.dk : stored.dv)[at];
  }
  std::vector<std::uint16_t> want_bits(want.size());
  numerics::encode_array(want.data(), want.size(), Format::bfloat16, want_bits.data());
  EXPECT_EQ(grads, want_bits);
}

TEST_P(FusedHeads, NearTheDoubleReference) {
  // The probabilities are rounded to bf16 (relative error 2^-9) before the product with v:
  // each output moves by at most 2^-9 * sum p |v| <= 2^-9 * max |v|, plus float32 sums.
  const std::int64_t bh = 2, t = 130, d = 64;
  const std::size_t n = static_cast<std::size_t>(bh * t * d);
  const auto q = bf16_values(n, 9, 1.0f), k = bf16_values(n, 10, 1.0f),
             v = bf16_values(n, 11, 1.0f);
  const float scale = 0.125f;
  std::vector<float> o(n), lse(bh * t), r(n);
  attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), bh, t, d, scale,
                    bf16_attention(GetParam()));
  attention_forward_ref(q.data(), k.data(), v.data(), r.data(), bh, t, d, scale);
  float vmax = 0;
  for (float x : v) vmax = std::max(vmax, std::fabs(x));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(o[i], r[i], std::ldexp(1.0, -9) * vmax * 1.05 + 1e-4) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, FusedHeads, ::testing::Values(MatmulRoute::bf16, MatmulRoute::amx),
                         [](const auto& info) { return std::string(route_name(info.param)); });

}  // namespace
}  // namespace mantissa::kernels
