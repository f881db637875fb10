#include "mantissa/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels {
namespace {

constexpr std::int64_t kBlock = 64;

std::vector<float>& scratch(int which) {
  thread_local std::vector<float> buffers[3];
  return buffers[which];
}

void round_if(float* x, std::int64_t n, numerics::Format f) {
  if (f != numerics::Format::float32) numerics::round_to_format(x, static_cast<std::size_t>(n), f);
}

// s (rows x cols, leading dim cols) = scale * q_block k_prefix^T, masked causally, then
// turned into probabilities p = exp(s - lse_row). Writes lse when `lse_out`, else reads
// `lse_in`.
void block_probabilities(const float* q, const float* k, std::int64_t i0, std::int64_t rows,
                         std::int64_t cols, std::int64_t d, float scale,
                         const AttentionPrecision& pr, float* s, float* lse_out,
                         const float* lse_in) {
  GemmShape g = GemmShape::dense(rows, cols, d, false, true);
  gemm_f32(g, q + i0 * d, k, s, false);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* sr = s + r * cols;
    const std::int64_t valid = i0 + r + 1;  // keys 0..i0+r
    for (std::int64_t c = 0; c < valid; ++c) sr[c] *= scale;
    if (pr.softmax_in_half) round_if(sr, valid, pr.half);
    float m = 0;
    if (lse_out != nullptr) {
      m = -std::numeric_limits<float>::infinity();
      for (std::int64_t c = 0; c < valid; ++c) m = std::max(m, sr[c]);
      float sum = 0;
      for (std::int64_t c = 0; c < valid; ++c) sum += std::exp(sr[c] - m);
      lse_out[r] = m + std::log(sum);
    }
    const float l = lse_out != nullptr ? lse_out[r] : lse_in[r];
    for (std::int64_t c = 0; c < valid; ++c) sr[c] = std::exp(sr[c] - l);
    for (std::int64_t c = valid; c < cols; ++c) sr[c] = 0.0f;
    if (pr.softmax_in_half) round_if(sr, valid, pr.half);
  }
  if (!pr.softmax_in_half) round_if(s, rows * cols, pr.half);  // p feeds a matmul
}

}  // namespace

void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                       const AttentionPrecision& pr) {
  std::vector<float>& s = scratch(0);
  s.resize(static_cast<std::size_t>(kBlock * t));
  for (std::int64_t h = 0; h < bh; ++h) {
    const float* qh = q + h * t * d;
    const float* kh = k + h * t * d;
    const float* vh = v + h * t * d;
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
      const std::int64_t rows = std::min(kBlock, t - i0);
      const std::int64_t cols = i0 + rows;  // causal: keys up to the block's last row
      block_probabilities(qh, kh, i0, rows, cols, d, scale, pr, s.data(), lse + h * t + i0,
                          nullptr);
      gemm_f32(GemmShape::dense(rows, d, cols), s.data(), vh, o + h * t * d + i0 * d, false);
    }
  }
}

void attention_backward(const float* q, const float* k, const float* v, const float* o,
                        const float* lse, const float* d_o, float* dq, float* dk, float* dv,
                        std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                        const AttentionPrecision& pr) {
  std::vector<float>& p = scratch(0);
  std::vector<float>& dp = scratch(1);
  std::vector<float>& delta = scratch(2);
  p.resize(static_cast<std::size_t>(kBlock * t));
  dp.resize(static_cast<std::size_t>(kBlock * t));
  delta.resize(static_cast<std::size_t>(kBlock));
  for (std::int64_t h = 0; h < bh; ++h) {
    const std::int64_t base = h * t * d;
    const float *qh = q + base, *kh = k + base, *vh = v + base, *oh = o + base, *doh = d_o + base;
    float *dqh = dq + base, *dkh = dk + base, *dvh = dv + base;
    std::fill(dkh, dkh + t * d, 0.0f);
    std::fill(dvh, dvh + t * d, 0.0f);
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
      const std::int64_t rows = std::min(kBlock, t - i0);
      const std::int64_t cols = i0 + rows;
      block_probabilities(qh, kh, i0, rows, cols, d, scale, pr, p.data(), nullptr,
                          lse + h * t + i0);
      // dV[0:cols] += P^T dO_block
      gemm_f32(GemmShape::dense(cols, d, rows, true, false), p.data(), doh + i0 * d, dvh, true);
      // dP = dO_block V[0:cols]^T
      gemm_f32(GemmShape::dense(rows, cols, d, false, true), doh + i0 * d, vh, dp.data(), false);
      for (std::int64_t r = 0; r < rows; ++r) {
        float acc = 0;
        for (std::int64_t c = 0; c < d; ++c) acc += doh[(i0 + r) * d + c] * oh[(i0 + r) * d + c];
        delta[static_cast<std::size_t>(r)] = acc;
      }
      // dS = P * (dP - delta) * scale (zero where masked, since P is zero there)
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) {
          const std::size_t idx = static_cast<std::size_t>(r * cols + c);
          dp[idx] = p[idx] * (dp[idx] - delta[static_cast<std::size_t>(r)]) * scale;
        }
      }
      round_if(dp.data(), rows * cols, pr.half);
      // dQ_block = dS K[0:cols];  dK[0:cols] += dS^T Q_block
      gemm_f32(GemmShape::dense(rows, d, cols), dp.data(), kh, dqh + i0 * d, false);
      gemm_f32(GemmShape::dense(cols, d, rows, true, false), dp.data(), qh + i0 * d, dkh, true);
    }
  }
}

void attention_forward_ref(const float* q, const float* k, const float* v, float* o,
                           std::int64_t bh, std::int64_t t, std::int64_t d, float scale) {
  std::vector<double> s(static_cast<std::size_t>(t));
  for (std::int64_t h = 0; h < bh; ++h) {
    const std::int64_t base = h * t * d;
    for (std::int64_t i = 0; i < t; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j <= i; ++j) {
        double acc = 0;
        for (std::int64_t c = 0; c < d; ++c) {
          acc += static_cast<double>(q[base + i * d + c]) * k[base + j * d + c];
        }
        s[static_cast<std::size_t>(j)] = acc * scale;
        m = std::max(m, s[static_cast<std::size_t>(j)]);
      }
      double sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - m);
      for (std::int64_t c = 0; c < d; ++c) {
        double acc = 0;
        for (std::int64_t j = 0; j <= i; ++j) {
          acc += std::exp(s[static_cast<std::size_t>(j)] - m) / sum * v[base + j * d + c];
        }
        o[base + i * d + c] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace mantissa::kernels
