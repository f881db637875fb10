// relu_max_pool2d: the vector paths (AVX2, AVX-512) against their scalar twins bit for bit, the
// forward against relu followed by max_pool2d (the unfused kernels, an independent loop) and
// the backward against hand-placed gradients; the bfloat16 kernels against the scalar twins
// on the decoded values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mantissa/kernels/conv.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "simd_paths.hpp"

namespace mantissa::kernels {
namespace {

std::vector<float> values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = 0.25f * static_cast<float>(pick(rng));  // ties and zeros
  for (std::size_t i = 7; i < n; i += 23) v[i] = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 11; i < n; i += 29) v[i] = -0.0f;
  for (std::size_t i = 13; i < n; i += 31) v[i] = -std::numeric_limits<float>::infinity();
  return v;
}

struct Case {
  std::int64_t h, w, kernel, stride;
};
// Widths of 7 and 14 windows (Fashion-MNIST's planes), a row of more than 16 windows with a
// tail, odd heights and widths (a last row or column in no window), overlapping windows.
// A case's output sizes on `planes` planes: oh, ow and their product with planes.
struct Outputs {
  std::int64_t oh, ow;
  std::size_t count;
};
Outputs outputs(const Case& c, std::int64_t planes) {
  const std::int64_t oh = (c.h - c.kernel) / c.stride + 1, ow = (c.w - c.kernel) / c.stride + 1;
  return {oh, ow, static_cast<std::size_t>(planes * oh * ow)};
}

constexpr Case kCases[] = {{28, 28, 2, 2}, {14, 14, 2, 2}, {7, 7, 2, 2},  {5, 33, 2, 2},
                           {6, 40, 2, 2},  {3, 70, 2, 2},  {9, 11, 3, 2}, {4, 4, 1, 1}};

TEST(ReluMaxPool, VectorRowsMatchTheTwinAndReluThenMaxPool) {
  testing::on_each_simd_path(testing::kEverySimdPath, [](const std::string& path) {
    for (const Case c : kCases) {
      constexpr std::int64_t planes = 3;
      const auto [oh, ow, out] = outputs(c, planes);
      const auto x = values(static_cast<std::size_t>(planes * c.h * c.w),
                            static_cast<unsigned>(c.h * 100 + c.w));
      std::vector<float> y(out), y_ref(out), y_plain(out);
      std::vector<std::int32_t> at(out), at_ref(out), at_plain(out);
      relu_max_pool2d_forward(x.data(), planes, c.h, c.w, c.kernel, c.stride, y.data(), at.data());
      relu_max_pool2d_forward_ref(x.data(), planes, c.h, c.w, c.kernel, c.stride, y_ref.data(),
                                  at_ref.data());
      // relu (which maps NaN to 0), then max pooling.
      std::vector<float> r(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) r[i] = x[i] > 0.0f ? x[i] : 0.0f;
      max_pool2d_forward(r.data(), planes, c.h, c.w, c.kernel, c.stride, y_plain.data(),
                         at_plain.data());
      const std::string what = std::to_string(c.h) + "x" + std::to_string(c.w) + " k" +
                               std::to_string(c.kernel) + " s" + std::to_string(c.stride) + " on " +
                               path;
      for (std::size_t i = 0; i < out; ++i) {
        EXPECT_EQ(std::memcmp(&y[i], &y_ref[i], 4), 0) << what << " output " << i;
        EXPECT_EQ(at[i], at_ref[i]) << what << " output " << i;
        EXPECT_EQ(std::memcmp(&y[i], &y_plain[i], 4), 0) << what << " output " << i;
        // Where the maximum is above zero both pick the same input; else the fused one none.
        EXPECT_EQ(at[i], y_plain[i] > 0.0f ? at_plain[i] : -1) << what << " output " << i;
      }
    }
  });
}

TEST(ReluMaxPool, BackwardMatchesTheScatterTwinBitForBit) {
  // The forward's argmax of mixed values, and gradients with -0, NaN and infinities: the
  // vector backward selects where the twin scatters; both give 0 + dy (a -0 arrives as +0).
  testing::on_each_simd_path(testing::kEverySimdPath, [](const std::string& path) {
    for (const Case c : kCases) {
      if (c.kernel != c.stride) continue;  // overlapping windows: max_pool2d's sums
      constexpr std::int64_t planes = 3;
      const auto [oh, ow, out] = outputs(c, planes);
      const auto x = values(static_cast<std::size_t>(planes * c.h * c.w),
                            static_cast<unsigned>(c.h * 10 + c.w));
      std::vector<float> y(out);
      std::vector<std::int32_t> at(out);
      relu_max_pool2d_forward_ref(x.data(), planes, c.h, c.w, c.kernel, c.stride, y.data(),
                                  at.data());
      const auto dy = values(out, static_cast<unsigned>(c.w));
      std::vector<float> dx(x.size(), 7.0f), dx_ref(x.size(), 9.0f);
      relu_max_pool2d_backward(dy.data(), at.data(), planes, c.h, c.w, c.kernel, c.stride,
                               dx.data());
      relu_max_pool2d_backward_ref(dy.data(), at.data(), planes, c.h * c.w, oh * ow, dx_ref.data());
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(std::memcmp(&dx[i], &dx_ref[i], 4), 0)
            << c.h << "x" << c.w << " on " << path << " input " << i << ": " << dx[i] << " vs "
            << dx_ref[i];
      }
    }
  });
}

TEST(ReluMaxPool, BackwardSendsEachGradientToItsArgmaxOnly) {
  const std::vector<std::int32_t> at = {0, -1, 5, 3};
  const std::vector<float> dy = {1.5f, 2.0f, -3.0f, 4.0f};
  std::vector<float> dx(8, 9.0f);
  relu_max_pool2d_backward_ref(dy.data(), at.data(), 1, 8, 4, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1.5f, 0, 0, 4.0f, 0, -3.0f, 0, 0}));
  // A 2 x 4 plane, windows of 2 x 2: output 0 won at input 5 (row 1, column 1), output 1 at
  // input 2; on every path.
  testing::on_each_simd_path(testing::kEverySimdPath, [](const std::string& path) {
    const std::vector<std::int32_t> at2 = {5, 2};
    const std::vector<float> dy2 = {1.5f, -0.0f};
    std::vector<float> dx2(8, 9.0f);
    relu_max_pool2d_backward(dy2.data(), at2.data(), 1, 2, 4, 2, 2, dx2.data());
    EXPECT_EQ(dx2, (std::vector<float>{0, 0, 0, 0, 0, 1.5f, 0, 0})) << path;
    EXPECT_FALSE(std::signbit(dx2[2])) << path;  // 0 + -0
  });
}

// bfloat16 bit patterns of every kind: values() (ties, zeros, -0, NaN, -inf) rounded, with
// +inf, subnormals, the largest finite value and a NaN with a payload planted.
std::vector<std::uint16_t> bf16_patterns(std::size_t n, unsigned seed) {
  const auto v = values(n, seed);
  std::vector<std::uint16_t> b(n);
  numerics::encode_array(v.data(), n, numerics::Format::bfloat16, b.data());
  for (std::size_t i = 3; i < n; i += 37) b[i] = 0x7f80;   // +inf
  for (std::size_t i = 5; i < n; i += 41) b[i] = 0x0001;   // the smallest subnormal
  for (std::size_t i = 17; i < n; i += 43) b[i] = 0x807f;  // a negative subnormal
  for (std::size_t i = 19; i < n; i += 47) b[i] = 0x7f7f;  // the largest finite value
  for (std::size_t i = 2; i < n; i += 53) b[i] = 0x7f81;   // a signalling NaN
  return b;
}

std::vector<float> decoded(const std::vector<std::uint16_t>& b) {
  std::vector<float> v(b.size());
  numerics::decode_array(b.data(), b.size(), numerics::Format::bfloat16, v.data());
  return v;
}

std::vector<std::uint16_t> encoded(const std::vector<float>& v) {
  std::vector<std::uint16_t> b(v.size());
  numerics::encode_array(v.data(), v.size(), numerics::Format::bfloat16, b.data());
  return b;
}

TEST(ReluMaxPool, Bf16KernelsMatchTheTwinsOnDecodedValues) {
  if (!numerics::cpu_supports(numerics::SimdPath::avx512)) {
    std::printf("skip: the bfloat16 pooling kernels need the avx512 path, not on this CPU\n");
    return;
  }
  for (const Case c : kCases) {
    constexpr std::int64_t planes = 3;
    const auto [oh, ow, out] = outputs(c, planes);
    const auto x = bf16_patterns(static_cast<std::size_t>(planes * c.h * c.w),
                                 static_cast<unsigned>(c.h * 7 + c.w));
    std::vector<std::uint16_t> y(out, 0x1234);
    std::vector<std::int32_t> at(out, 77);
    const bool taken = relu_max_pool2d_forward_bf16(x.data(), planes, c.h, c.w, c.kernel, c.stride,
                                                    y.data(), at.data());
    const std::string what = std::to_string(c.h) + "x" + std::to_string(c.w) + " k" +
                             std::to_string(c.kernel) + " s" + std::to_string(c.stride);
    // Only 2 x 2 windows of stride 2 are theirs; the others are left to the caller untouched.
    ASSERT_EQ(taken, c.kernel == 2 && c.stride == 2) << what;
    if (!taken) {
      EXPECT_EQ(y, std::vector<std::uint16_t>(out, 0x1234)) << what;
      continue;
    }
    std::vector<float> y_ref(out);
    std::vector<std::int32_t> at_ref(out);
    relu_max_pool2d_forward_ref(decoded(x).data(), planes, c.h, c.w, c.kernel, c.stride,
                                y_ref.data(), at_ref.data());
    EXPECT_EQ(y, encoded(y_ref)) << what;
    EXPECT_EQ(at, at_ref) << what;

    const auto dy = bf16_patterns(out, static_cast<unsigned>(c.w * 3));
    std::vector<std::uint16_t> dx(x.size(), 0x4321);
    ASSERT_TRUE(relu_max_pool2d_backward_bf16(dy.data(), at.data(), planes, c.h, c.w, c.kernel,
                                              c.stride, dx.data()));
    std::vector<float> dx_ref(x.size());
    relu_max_pool2d_backward_ref(decoded(dy).data(), at_ref.data(), planes, c.h * c.w, oh * ow,
                                 dx_ref.data());
    const auto want = encoded(dx_ref);  // 0 + dy rounded: a -0 as +0, a NaN quieted
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(dx[i], want[i]) << what << " input " << i;
    }
  }
  // Another SIMD path: not taken.
  numerics::set_simd_path(numerics::SimdPath::avx2);
  std::vector<std::uint16_t> x(16, 0x3f80), y(4);
  std::vector<std::int32_t> at(4);
  EXPECT_FALSE(relu_max_pool2d_forward_bf16(x.data(), 1, 4, 4, 2, 2, y.data(), at.data()));
  numerics::set_simd_path(numerics::best_simd_path());
}

}  // namespace
}  // namespace mantissa::kernels
