#include "mantissa/kernels/pointwise.hpp"

#include <cmath>

namespace mantissa::kernels {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

// tanh through exp: a form the compiler vectorizes (x clamped so exp cannot overflow).
inline float fast_tanh(float x) {
  const float c = x > 15.0f ? 15.0f : (x < -15.0f ? -15.0f : x);
  const float e = std::exp(2.0f * c);
  return (e - 1.0f) / (e + 1.0f);
}
}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + fast_tanh(a * (v + b * v * v * v)));
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(a * (v + b * v * v * v));
    const float dt = (1.0f - t * t) * a * (1.0f + 3.0f * b * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
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
