#include "mantissa/kernels/rows.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "lane_sums.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/cbfloat16_avx2.hpp"

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

// Eight values of a row from element c widened to float32 exactly (n < 8: the lanes past n
// zero, nothing past n read).
template <class T, class Widen8>
__m256 lanes(const T* p, std::int64_t c, std::int64_t n, Widen8 widen8) {
  if (n == 8) return widen8(p + c);
  T b[8] = {};
  std::memcpy(b, p + c, static_cast<std::size_t>(n) * sizeof(T));
  return widen8(b);
}

__m256i words8(const std::uint16_t* p) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

__m256 float32_8(const float* p) {
  return _mm256_loadu_ps(p);
}
__m256 bfloat16_8(const std::uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(words8(p), 16));
}
__m256 float16_8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// cbfloat16 (1/6/9, bias 31): numerics::avx2::cbfloat16_magnitudes8 (normal numbers rebiased
// in integers, subnormals and zero by an exact conversion, whatever the FTZ/DAZ flags say); the
// top exponent field is an infinity (fraction 0) or a NaN with its payload (quieted by the
// first arithmetic, as the codec's decode would have it).
__m256 cbfloat16_8(const std::uint16_t* p) {
  const __m256i b = words8(p);
  const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(0x7fff));
  const __m256i finite = numerics::avx2::cbfloat16_magnitudes8(mag);
  const __m256i special =
      _mm256_or_si256(_mm256_set1_epi32(0x7f800000),
                      _mm256_slli_epi32(_mm256_and_si256(mag, _mm256_set1_epi32(0x1ff)), 14));
  const __m256i v =
      _mm256_blendv_epi8(finite, special, _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7dff)));
  return _mm256_castsi256_ps(
      _mm256_or_si256(v, _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x8000)), 16)));
}

// dgamma += dy * xhat (one fused multiply-add), dbeta += dy, 8 columns a step: the same
// operations for every storage format, so every format gives the floats of its decoded rows.
template <class T, class Widen8>
void param_gradients(const T* x, const T* dy, float mean, float rstd, float* dgamma, float* dbeta,
                     std::int64_t width, Widen8 widen8) {
  const __m256 m = _mm256_set1_ps(mean), rs = _mm256_set1_ps(rstd);
  for (std::int64_t c = 0; c < width; c += 8) {
    const std::int64_t n = std::min<std::int64_t>(8, width - c);
    const __m256 g = lanes(dy, c, n, widen8);
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(lanes(x, c, n, widen8), m), rs);
    if (n == 8) {
      _mm256_storeu_ps(dgamma + c, _mm256_fmadd_ps(g, xhat, _mm256_loadu_ps(dgamma + c)));
      _mm256_storeu_ps(dbeta + c, _mm256_add_ps(_mm256_loadu_ps(dbeta + c), g));
      continue;
    }
    float dg[8] = {}, db[8] = {};
    std::memcpy(dg, dgamma + c, static_cast<std::size_t>(n) * sizeof(float));
    std::memcpy(db, dbeta + c, static_cast<std::size_t>(n) * sizeof(float));
    _mm256_storeu_ps(dg, _mm256_fmadd_ps(g, xhat, _mm256_loadu_ps(dg)));
    _mm256_storeu_ps(db, _mm256_add_ps(_mm256_loadu_ps(db), g));
    std::memcpy(dgamma + c, dg, static_cast<std::size_t>(n) * sizeof(float));
    std::memcpy(dbeta + c, db, static_cast<std::size_t>(n) * sizeof(float));
  }
}

}  // namespace

void layer_norm_param_gradients(const float* x, const float* dy, float mean, float rstd,
                                float* dgamma, float* dbeta, std::int64_t width) {
  param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, float32_8);
}

void layer_norm_param_gradients_16(const std::uint16_t* x, const std::uint16_t* dy,
                                   numerics::Format format, float mean, float rstd, float* dgamma,
                                   float* dbeta, std::int64_t width) {
  switch (format) {
    case numerics::Format::bfloat16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, bfloat16_8);
    case numerics::Format::float16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, float16_8);
    case numerics::Format::cbfloat16:
      return param_gradients(x, dy, mean, rstd, dgamma, dbeta, width, cbfloat16_8);
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
