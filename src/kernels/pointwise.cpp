#include "mantissa/kernels/pointwise.hpp"

#include <cmath>

namespace mantissa::kernels {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

// 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation for large negative x (exp(-2u) may reach
// infinity there, giving exactly 0).
void gelu_forward(const float* x, float* y, std::int64_t n) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float s = 1.0f / (1.0f + std::exp(-2.0f * a * (v + b * v * v * v)));
    y[i] = v * s;
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float s = 1.0f / (1.0f + std::exp(-2.0f * a * (v + b * v * v * v)));
    const float du = a * (1.0f + 3.0f * b * v * v);
    dx[i] = dy[i] * (s + v * s * (1.0f - s) * 2.0f * du);
  }
}

void gelu_forward_ref(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v))));
  }
}

void gelu_backward_ref(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
    const double dt = (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kCubic * v * v);
    dx[i] = static_cast<float>(dy[i] * (0.5 * (1.0 + t) + 0.5 * v * dt));
  }
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace mantissa::kernels
