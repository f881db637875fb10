#include "mantissa/kernels/rows.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "lane_sums.hpp"
#include "mantissa/error.hpp"

namespace mantissa::kernels {
namespace {

// log(sum(exp(x))) of one row, shifted by its max.
float row_logsumexp(const float* x, std::int64_t cols) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, x[c]);
  float s = 0;
  for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - m);
  return m + std::log(s);
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, std::int64_t rows, std::int64_t cols, float eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float s =
        detail::lane_sums<1>(cols, [&](std::int64_t c) { return std::array{xr[c]}; })[0];
    const float mu = s / static_cast<float>(cols);
    const float v = detail::lane_sums<1>(cols, [&](std::int64_t c) {
      const float e = xr[c] - mu;
      return std::array{e * e};
    })[0];
    const float rs = 1.0f / std::sqrt(v / static_cast<float>(cols) + eps);
    float* yr = y + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    const float mu = mean[r], rs = rstd[r];
    const std::array<float, 2> sums = detail::lane_sums<2>(cols, [&](std::int64_t c) {
      const float xhat = (xr[c] - mu) * rs;
      const float g = dyr[c] * gamma[c];
      return std::array{g, g * xhat};
    });
    const float mg = sums[0] / static_cast<float>(cols), mgx = sums[1] / static_cast<float>(cols);
    float* dxr = dx + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - mg - xhat * mgx);
    }
  }
}

namespace {

// 16-bit stored values widened to float32 exactly, without branches (the loops vectorize).
struct Bf16Bits {
  float operator()(std::uint16_t b) const {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
  }
};
struct F16Bits {
  float operator()(std::uint16_t b) const { return static_cast<float>(std::bit_cast<_Float16>(b)); }
};
// cbfloat16 (1/6/9, bias 31): the fields moved into float32's place read as 2^-96 times the
// value (normal numbers, subnormals and zero alike), and one exact multiply rebiases; the
// top exponent field is an infinity (fraction 0) or a NaN with its payload (quieted by the
// first arithmetic, as the codec's decode would have it).
struct Cbf16Bits {
  float operator()(std::uint16_t b) const {
    const std::uint32_t mag = b & 0x7fffu;
    const std::uint32_t finite =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(mag << 14) * 0x1p96f);
    const std::uint32_t special = 0x7f800000u | ((mag & 0x1ffu) << 14);
    return std::bit_cast<float>((mag >= 0x7e00u ? special : finite) |
                                (static_cast<std::uint32_t>(b & 0x8000u) << 16));
  }
};

template <class T, class Widen>
void param_gradients(const T* x, const T* dy, float mean, float rstd, float* dgamma, float* dbeta,
                     std::int64_t width, Widen widen) {
  for (std::int64_t c = 0; c < width; ++c) {
    const float g = widen(dy[c]);
    const float xhat = (widen(x[c]) - mean) * rstd;
    dgamma[c] += g * xhat;
    dbeta[c] += g;
  }
}

}  // namespace

void layer_norm_param_gradients(const float* x, const float* dy, float mean, float rstd,
                                float* dgamma, float* dbeta, std::int64_t width) {
  param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, [](float v) { return v; });
}

void layer_norm_param_gradients_16(const std::uint16_t* x, const std::uint16_t* dy,
                                   numerics::Format format, float mean, float rstd, float* dgamma,
                                   float* dbeta, std::int64_t width) {
  switch (format) {
    case numerics::Format::bfloat16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, Bf16Bits{});
    case numerics::Format::float16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, F16Bits{});
    case numerics::Format::cbfloat16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, Cbf16Bits{});
    default:
      throw Error("layer_norm_param_gradients_16: bfloat16, float16 or cbfloat16 bits, not " +
                  std::string(numerics::name(format)));
  }
}

void layer_norm_forward_ref(const float* x, const float* gamma, const float* beta, float* y,
                            std::int64_t rows, std::int64_t cols, float eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0, v = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
    const double mu = s / static_cast<double>(cols);
    for (std::int64_t c = 0; c < cols; ++c) v += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>((x[r * cols + c] - mu) * rs * gamma[c] + beta[c]);
    }
  }
}

void softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    float s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - m);
      s += yr[c];
    }
    const float inv = 1.0f / s;
    for (std::int64_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
}

void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows,
                      std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    float dot = 0;
    for (std::int64_t c = 0; c < cols; ++c) dot += yr[c] * dyr[c];
    for (std::int64_t c = 0; c < cols; ++c) dx[r * cols + c] = yr[c] * (dyr[c] - dot);
  }
}

void log_softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float lse = row_logsumexp(xr, cols);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = xr[c] - lse;
  }
}

void log_softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows,
                          std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += dy[r * cols + c];
    for (std::int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] = dy[r * cols + c] - std::exp(y[r * cols + c]) * s;
    }
  }
}

void softmax_forward_ref(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    for (std::int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>(std::exp(x[r * cols + c] - m) / s);
    }
  }
}

void log_softmax_forward_ref(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    const double lse = m + std::log(s);
    for (std::int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(x[r * cols + c] - lse);
  }
}

std::int64_t cross_entropy_forward(const float* logits, const std::int32_t* targets,
                                   std::int64_t rows, std::int64_t cols, std::int32_t ignore_index,
                                   float* loss, float* lse) {
  std::int64_t counted = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    lse[r] = row_logsumexp(xr, cols);
    const std::int32_t t = targets[r];
    if (t == ignore_index) {
      loss[r] = 0.0f;
      continue;
    }
    if (t < 0 || t >= cols) {
      throw Error("cross_entropy: target " + std::to_string(t) + " at row " + std::to_string(r) +
                  " is outside [0, " + std::to_string(cols) + ")");
    }
    loss[r] = lse[r] - xr[t];
    ++counted;
  }
  return counted;
}

void cross_entropy_backward(const float* logits, const float* lse, const std::int32_t* targets,
                            std::int64_t rows, std::int64_t cols, std::int32_t ignore_index,
                            float scale, float* dlogits) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    float* d = dlogits + r * cols;
    if (targets[r] == ignore_index) {
      for (std::int64_t c = 0; c < cols; ++c) d[c] = 0.0f;
      continue;
    }
    const float* xr = logits + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) d[c] = scale * std::exp(xr[c] - lse[r]);
    d[targets[r]] -= scale;
  }
}

}  // namespace mantissa::kernels
