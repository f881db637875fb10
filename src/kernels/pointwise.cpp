#include "mantissa/kernels/pointwise.hpp"

#include <algorithm>
#include <cmath>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pointwise_avx512.hpp"
#include "vector_exp.hpp"

namespace mantissa::kernels {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

// 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation for large negative x (exp(-2u) may reach
// infinity there, giving exactly 0). exp runs 8 lanes at a time on a block of e = exp(-2u),
// and blocks are spread over the threads.
namespace {
constexpr std::int64_t kTile = 512;

// e[i] = exp(-2u(x[i])) for one tile.
void gelu_exponentials(const float* x, float* e, std::int64_t len) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < len; ++i) {
    const float v = x[i];
    e[i] = -2.0f * a * (v + b * v * v * v);
  }
  detail::exp_shifted(e, e, len, 0.0f);
}

bool avx512() {
  return numerics::active_simd_path() == numerics::SimdPath::avx512;
}
}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_forward_avx512(x + begin, y + begin, end - begin);
    });
    return;
  }
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float e[kTile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kTile) {
      const std::int64_t len = std::min(kTile, end - t0);
      gelu_exponentials(x + t0, e, len);
      for (std::int64_t i = 0; i < len; ++i) y[t0 + i] = x[t0 + i] / (1.0f + e[i]);
    }
  });
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_backward_avx512(x + begin, dy + begin, dx + begin, end - begin);
    });
    return;
  }
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float e[kTile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kTile) {
      const std::int64_t len = std::min(kTile, end - t0);
      gelu_exponentials(x + t0, e, len);
      for (std::int64_t i = 0; i < len; ++i) {
        const float v = x[t0 + i];
        const float s = 1.0f / (1.0f + e[i]);
        const float du = a * (1.0f + 3.0f * b * std::min(v * v, detail::kGeluSquareCap));
        dx[t0 + i] = dy[t0 + i] * (s + v * s * (1.0f - s) * 2.0f * du);
      }
    }
  });
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

void exp_forward(const float* x, float* y, std::int64_t n) {
  detail::exp_shifted(x, y, n, 0.0f);
}

void exp_forward_ref(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  });
}

}  // namespace mantissa::kernels
