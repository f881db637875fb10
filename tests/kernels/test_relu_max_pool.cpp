// relu_max_pool2d: the vector path against its scalar twin bit for bit, and both against relu
// followed by max_pool2d (the unfused kernels, an independent loop).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/kernels/conv.hpp"

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

TEST(ReluMaxPool, VectorRowsMatchTheTwinAndReluThenMaxPool) {
  struct Case {
    std::int64_t h, w, kernel, stride;
  };
  for (const Case c : {Case{28, 28, 2, 2}, Case{14, 14, 2, 2}, Case{7, 7, 2, 2}, Case{5, 33, 2, 2},
                       Case{6, 40, 2, 2}, Case{9, 11, 3, 2}, Case{4, 4, 1, 1}}) {
    const std::int64_t planes = 3, oh = (c.h - c.kernel) / c.stride + 1,
                       ow = (c.w - c.kernel) / c.stride + 1;
    const auto x = values(static_cast<std::size_t>(planes * c.h * c.w),
                          static_cast<unsigned>(c.h * 100 + c.w));
    const std::size_t out = static_cast<std::size_t>(planes * oh * ow);
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
                             std::to_string(c.kernel) + " s" + std::to_string(c.stride);
    for (std::size_t i = 0; i < out; ++i) {
      EXPECT_EQ(std::memcmp(&y[i], &y_ref[i], 4), 0) << what << " output " << i;
      EXPECT_EQ(at[i], at_ref[i]) << what << " output " << i;
      EXPECT_EQ(std::memcmp(&y[i], &y_plain[i], 4), 0) << what << " output " << i;
      // Where the maximum is above zero both pick the same input; else the fused one none.
      EXPECT_EQ(at[i], y_plain[i] > 0.0f ? at_plain[i] : -1) << what << " output " << i;
    }
  }
}

TEST(ReluMaxPool, BackwardSendsEachGradientToItsArgmaxOnly) {
  const std::vector<std::int32_t> at = {0, -1, 5, 3};
  const std::vector<float> dy = {1.5f, 2.0f, -3.0f, 4.0f};
  std::vector<float> dx(8, 9.0f);
  relu_max_pool2d_backward(dy.data(), at.data(), 1, 8, 4, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1.5f, 0, 0, 4.0f, 0, -3.0f, 0, 0}));
}

}  // namespace
}  // namespace mantissa::kernels
