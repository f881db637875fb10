// The bfloat16 pointwise kernels (GELU forward and backward, add) against their twins, which
// decode with the scalar codec, run the float32 kernel and encode with the scalar codec: the
// same bits on every SIMD path, for every bfloat16 input of one operand; and against GELU in
// double, to within one bfloat16 rounding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "mantissa/kernels/pointwise.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pointwise_avx512.hpp"
#include "simd_paths.hpp"

namespace mantissa::kernels {
namespace {

using Bits = std::vector<std::uint16_t>;

// Every bfloat16 pattern once, in order (NaNs, infinities, subnormals and both zeros among
// them), then 37 more so that the length is no multiple of a vector.
Bits every_pattern() {
  Bits x(65536 + 37);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint16_t>(i * 40503u);
  for (std::size_t i = 0; i < 65536; ++i) x[i] = static_cast<std::uint16_t>(i);
  return x;
}

// n patterns of values of moderate size (the gradients of a trained layer), and a few of the
// special ones.
Bits moderate_patterns(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e38f, 65504.0f};
  for (std::size_t i = 0; i < sizeof(specials) / sizeof(float) && i < n; ++i)
    v[i * 97 % n] = specials[i];
  Bits out(n);
  numerics::encode_array_ref(v.data(), n, numerics::Format::bfloat16, out.data());
  return out;
}

void expect_same_bits(const Bits& got, const Bits& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << what << ": element " << i;
  }
}

float value(std::uint16_t bits) {
  float f = 0.0f;
  numerics::decode_array_ref(&bits, 1, numerics::Format::bfloat16, &f);
  return f;
}

TEST(Bf16Pointwise, GeluForwardIsTheDecodedKernelRoundedForEveryInput) {
  const Bits x = every_pattern();
  const auto n = static_cast<std::int64_t>(x.size());
  testing::on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                             [&](const std::string& path) {
                               SCOPED_TRACE(path);
                               Bits y(x.size(), 0xAAAA), want(x.size());
                               gelu_forward_bf16(x.data(), y.data(), n);
                               gelu_forward_bf16_ref(x.data(), want.data(), n);
                               expect_same_bits(y, want, "gelu forward");
                             });
}

TEST(Bf16Pointwise, GeluBackwardIsTheDecodedKernelRoundedForEveryInput) {
  const Bits x = every_pattern();
  const Bits dy = moderate_patterns(x.size(), 3);
  const auto n = static_cast<std::int64_t>(x.size());
  testing::on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                             [&](const std::string& path) {
                               SCOPED_TRACE(path);
                               Bits dx(x.size(), 0xAAAA), want(x.size());
                               gelu_backward_bf16(x.data(), dy.data(), dx.data(), n);
                               gelu_backward_bf16_ref(x.data(), dy.data(), want.data(), n);
                               expect_same_bits(dx, want, "gelu backward");
                               // and with every pattern as the gradient
                               gelu_backward_bf16(dy.data(), x.data(), dx.data(), n);
                               gelu_backward_bf16_ref(dy.data(), x.data(), want.data(), n);
                               expect_same_bits(dx, want, "gelu backward, every dy");
                             });
}

TEST(Bf16Pointwise, AddIsTheFloatSumRoundedForEveryInput) {
  const Bits a = every_pattern();
  const Bits b = moderate_patterns(a.size(), 4);
  const auto n = static_cast<std::int64_t>(a.size());
  testing::on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                             [&](const std::string& path) {
                               SCOPED_TRACE(path);
                               Bits y(a.size(), 0xAAAA), want(a.size());
                               add_bf16(a.data(), b.data(), y.data(), n);
                               add_bf16_ref(a.data(), b.data(), want.data(), n);
                               expect_same_bits(y, want, "add");
                             });
  // The sum of two bfloat16 values a few binades apart is exact in float32, so the result is
  // the exact sum rounded once: check that against double for those.
  Bits y(a.size());
  add_bf16(a.data(), b.data(), y.data(), n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double s = static_cast<double>(value(a[i])) + static_cast<double>(value(b[i]));
    if (!std::isfinite(s) || std::fabs(s) > 1e30 || std::fabs(s) < 1e-30) continue;
    const float exact = static_cast<float>(s);
    if (static_cast<double>(exact) != s) continue;  // not exact in float32
    std::uint16_t want = 0;
    numerics::encode_array_ref(&exact, 1, numerics::Format::bfloat16, &want);
    ASSERT_EQ(y[i], want) << "add: element " << i;
  }
}

TEST(Bf16Pointwise, SumToFloat32IsTheDecodedSumForEveryInput) {
  const Bits a = every_pattern();
  const Bits b = moderate_patterns(a.size(), 6);
  const auto n = static_cast<std::int64_t>(a.size());
  // float32 operands: the moderate values widened, and every bfloat16 pattern widened (NaNs
  // with their signalling bit, as a float32 gradient could hold them).
  std::vector<float> af(a.size()), bf(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    af[i] = std::bit_cast<float>(static_cast<std::uint32_t>(a[i]) << 16);
    bf[i] = std::bit_cast<float>(static_cast<std::uint32_t>(b[i]) << 16) * 3.0f;
  }
  testing::on_each_simd_path(
      {numerics::SimdPath::avx2, numerics::SimdPath::avx512}, [&](const std::string& path) {
        SCOPED_TRACE(path);
        std::vector<float> y(a.size(), -7.0f), want(a.size());
        for (const int mix : {0, 1, 2, 3, 4, 5}) {  // bf16 + bf16 both ways, then mixed
          const Bf16OrFloat32 x = mix == 0   ? Bf16OrFloat32{a.data(), true}
                                  : mix == 1 ? Bf16OrFloat32{b.data(), true}
                                  : mix == 2 ? Bf16OrFloat32{a.data(), true}
                                  : mix == 3 ? Bf16OrFloat32{bf.data(), false}
                                  : mix == 4 ? Bf16OrFloat32{af.data(), false}
                                             : Bf16OrFloat32{b.data(), true};
          const Bf16OrFloat32 z = mix == 0   ? Bf16OrFloat32{b.data(), true}
                                  : mix == 1 ? Bf16OrFloat32{a.data(), true}
                                  : mix == 2 ? Bf16OrFloat32{bf.data(), false}
                                  : mix == 3 ? Bf16OrFloat32{a.data(), true}
                                  : mix == 4 ? Bf16OrFloat32{b.data(), true}
                                             : Bf16OrFloat32{af.data(), false};
          sum_to_float32(x, z, y.data(), n);
          sum_to_float32_ref(x, z, want.data(), n);
          for (std::size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(want[i]))
                << "element " << i << ", operand mix " << mix;
          }
        }
      });
}

// A bias gradient's column sums from bfloat16 rows (every pattern among them, a width with a
// vector tail, a row stride past the width) against the codec's decodes added in row order,
// bit for bit, into sums that start nonzero.
TEST(Bf16Pointwise, RowSumsAreTheDecodedRowsAddedInOrder) {
  const std::int64_t n = 389, ld = 401, rows = (65536 + 37) / ld + 1;
  Bits g = every_pattern();
  g.resize(static_cast<std::size_t>(rows * ld), 0x3F80);
  testing::on_each_simd_path(
      {numerics::SimdPath::avx2, numerics::SimdPath::avx512}, [&](const std::string& path) {
        SCOPED_TRACE(path);
        std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
        for (std::size_t j = 0; j < got.size(); ++j) got[j] = want[j] = 0.25f * j;
        add_bf16_rows(g.data(), rows, ld, n, got.data());
        add_bf16_rows_ref(g.data(), rows, ld, n, want.data());
        for (std::size_t j = 0; j < got.size(); ++j) {
          // A sum that met two NaNs keeps either's payload (C++ leaves which to the compiler):
          // NaN for NaN, the bits otherwise.
          if (std::isnan(want[j])) {
            ASSERT_TRUE(std::isnan(got[j])) << "column " << j;
            continue;
          }
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[j]), std::bit_cast<std::uint32_t>(want[j]))
              << "column " << j;
        }
      });
}

// a + 0 is a for every bfloat16 a, but -0 + 0 = +0 and a NaN comes back quiet: an exact
// reference that does not go through the float32 kernel, and whose subnormal results take
// the conversion unit's fallback (the unit flushes them to zero).
TEST(Bf16Pointwise, AddingZeroGivesEveryPatternBack) {
  const Bits a = every_pattern();
  const Bits zero(a.size(), 0);
  Bits y(a.size());
  add_bf16(a.data(), zero.data(), y.data(), static_cast<std::int64_t>(a.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool nan = (a[i] & 0x7F80) == 0x7F80 && (a[i] & 0x7F) != 0;
    const std::uint16_t want = nan              ? static_cast<std::uint16_t>(a[i] | 0x40)
                               : a[i] == 0x8000 ? std::uint16_t{0}
                                                : a[i];
    ASSERT_EQ(y[i], want) << "pattern " << i;
  }
}

// On AVX-512, each way of rounding (the conversion unit where the CPU has AVX512-BF16, the
// integer arithmetic on every AVX-512 CPU) against the twins.
TEST(Bf16Pointwise, BothWaysOfRoundingOnAvx512GiveTheTwinsBits) {
  if (!numerics::cpu_supports(numerics::SimdPath::avx512)) {
    GTEST_SKIP() << "skip: no AVX-512 on this CPU";
  }
  numerics::set_simd_path(numerics::SimdPath::avx512);
  const Bits x = every_pattern();
  const Bits dy = moderate_patterns(x.size(), 5);
  const auto n = static_cast<std::int64_t>(x.size());
  Bits want(x.size()), got(x.size());
  for (const bool unit : {false, true}) {
    if (unit && !numerics::cpu_features().avx512_bf16) {
      std::printf("skip: no AVX512-BF16 conversion unit on this CPU\n");
      continue;
    }
    SCOPED_TRACE(unit ? "conversion unit" : "integer rounding");
    gelu_forward_bf16_ref(x.data(), want.data(), n);
    detail::gelu_forward_bf16_avx512(x.data(), got.data(), n, unit);
    expect_same_bits(got, want, "gelu forward");
    gelu_backward_bf16_ref(x.data(), dy.data(), want.data(), n);
    detail::gelu_backward_bf16_avx512(x.data(), dy.data(), got.data(), n, unit);
    expect_same_bits(got, want, "gelu backward");
    add_bf16_ref(x.data(), dy.data(), want.data(), n);
    detail::add_bf16_avx512(x.data(), dy.data(), got.data(), n, unit);
    expect_same_bits(got, want, "add");
    const Bits zero(x.size(), 0);
    add_bf16_ref(x.data(), zero.data(), want.data(), n);
    detail::add_bf16_avx512(x.data(), zero.data(), got.data(), n, unit);
    expect_same_bits(got, want, "add of zero (subnormal results)");
  }
  numerics::set_simd_path(numerics::best_simd_path());
}

TEST(Bf16Pointwise, GeluForwardIsWithinOneBfloat16RoundingOfDouble) {
  const Bits x = every_pattern();
  const auto n = static_cast<std::int64_t>(x.size());
  Bits y(x.size());
  gelu_forward_bf16(x.data(), y.data(), n);
  int checked = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = value(x[i]);
    if (!std::isfinite(v) || std::fabs(v) > 1e4) continue;
    const double want =
        0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    if (std::fabs(want) < 1e-30) continue;
    // bfloat16 keeps 8 significant bits: half an ulp of rounding (at most 2^-8 relative) on top of
    // the float32 kernel's tolerance (KernelTwins.Gelu: 1e-6 absolute, 1e-5 relative; the
    // absolute part covers the far negative tail, where GELU is tiny).
    ASSERT_NEAR(value(y[i]), want, 1e-6 + std::fabs(want) * (0x1p-8 + 1e-5)) << "x = " << v;
    ++checked;
  }
  EXPECT_GT(checked, 25000);  // 27,343 of the patterns are in range
}

}  // namespace
}  // namespace mantissa::kernels
