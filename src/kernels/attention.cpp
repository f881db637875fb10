#include "mantissa/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"
#include "scratch.hpp"
#include "vector_exp.hpp"

namespace mantissa::kernels {
namespace {

constexpr std::int64_t kBlock = 64;

// Per-thread scratch that only grows: no allocation once warm.
float* sized(int which, std::int64_t n) {
  thread_local ScratchBuffer buffers[7];
  return buffers[which].as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

void round_if(float* x, std::int64_t n, numerics::Format f) {
  if (f != numerics::Format::float32) numerics::round_to_format(x, static_cast<std::size_t>(n), f);
}

Operand at(const Operand& x, std::int64_t elements) {
  return {static_cast<const char*>(x.data) + elements * numerics::traits(x.format).storage_bytes,
          x.format};
}

// n elements of x from element `index` on, as float32 (into `buffer` unless x is float32).
const float* decoded(const Operand& x, std::int64_t index, std::int64_t n, float* buffer) {
  if (x.format == numerics::Format::float32) return static_cast<const float*>(x.data) + index;
  numerics::decode_array(
      static_cast<const char*>(x.data) + index * numerics::traits(x.format).storage_bytes,
      static_cast<std::size_t>(n), x.format, buffer);
  return buffer;
}

// One head's operands: row 0 of each and the distance between rows.
struct Head {
  Operand q, k, v;
  std::int64_t ld;
};

// s (rows x cols, leading dim cols) = the probabilities of query rows i0.. against keys
// 0..cols-1: scale * q k^T, causally masked, softmax via the row log-sum-exp. Writes lse
// when `lse_out`, else uses `lse_in` (the backward's recomputation, bit-identical).
void block_probabilities(const Head& h, std::int64_t i0, std::int64_t rows, std::int64_t cols,
                         std::int64_t d, float scale, const AttentionPrecision& pr, float* s,
                         float* lse_out, const float* lse_in, float* tmp) {
  const GemmShape g{rows, cols, d, false, true, h.ld, h.ld, cols};
  gemm_in_thread(g, at(h.q, i0 * h.ld), h.k, s, false, pr.gemm);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* sr = s + r * cols;
    const std::int64_t valid = i0 + r + 1;  // keys 0..i0+r
    for (std::int64_t c = 0; c < valid; ++c) sr[c] *= scale;
    if (pr.softmax_in_half) round_if(sr, valid, pr.half);
    float l;
    if (lse_out != nullptr) {
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t c = 0; c < valid; ++c) m = std::max(m, sr[c]);
      l = m + std::log(detail::exp_shifted(sr, tmp, valid, m));
      lse_out[r] = l;
    } else {
      l = lse_in[r];
    }
    detail::exp_shifted(sr, sr, valid, l);
    std::fill(sr + valid, sr + cols, 0.0f);
    if (pr.softmax_in_half) round_if(sr, valid, pr.half);
  }
  if (!pr.softmax_in_half) round_if(s, rows * cols, pr.half);  // p feeds a matmul
}

void forward_head(const Head& h, AttentionOutput o, std::int64_t ldo, float* lse, std::int64_t t,
                  std::int64_t d, float scale, const AttentionPrecision& pr) {
  float* s = sized(0, kBlock * t);
  float* tmp = sized(1, t);
  float* ob = sized(2, kBlock * d);
  const int bytes = numerics::traits(o.format).storage_bytes;
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0);
    const std::int64_t cols = i0 + rows;  // causal: keys up to the block's last row
    block_probabilities(h, i0, rows, cols, d, scale, pr, s, lse + i0, nullptr, tmp);
    gemm_in_thread(GemmShape{rows, d, cols, false, false, cols, h.ld, d}, s, h.v, ob, false,
                   pr.gemm);
    for (std::int64_t r = 0; r < rows; ++r) {
      numerics::encode_array(ob + r * d, static_cast<std::size_t>(d), o.format,
                             static_cast<char*>(o.data) + (i0 + r) * ldo * bytes);
    }
  }
}

// dq is written in place (layout ld); dk and dv are summed over blocks in dense scratch and
// then stored (layout ld).
void backward_head(const Head& h, const Operand& o, const Operand& d_o, std::int64_t ldo,
                   const float* lse, float* dq, float* dk, float* dv, std::int64_t t,
                   std::int64_t d, float scale, const AttentionPrecision& pr) {
  float* p = sized(0, kBlock * t);
  float* dp = sized(1, kBlock * t);
  float* dk_acc = sized(2, t * d);
  float* dv_acc = sized(3, t * d);
  float* delta = sized(4, kBlock);
  float* row_o = sized(5, d);
  float* row_do = sized(6, d);
  std::fill(dk_acc, dk_acc + t * d, 0.0f);
  std::fill(dv_acc, dv_acc + t * d, 0.0f);
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0);
    const std::int64_t cols = i0 + rows;
    block_probabilities(h, i0, rows, cols, d, scale, pr, p, nullptr, lse + i0, nullptr);
    const Operand dob = at(d_o, i0 * ldo);
    // dV[0:cols] += P^T dO_block
    gemm_in_thread(GemmShape{cols, d, rows, true, false, cols, ldo, d}, p, dob, dv_acc, true,
                   pr.gemm);
    // dP = dO_block V[0:cols]^T
    gemm_in_thread(GemmShape{rows, cols, d, false, true, ldo, h.ld, cols}, dob, h.v, dp, false,
                   pr.gemm);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* dor = decoded(d_o, (i0 + r) * ldo, d, row_do);
      const float* orow = decoded(o, (i0 + r) * ldo, d, row_o);
      float acc = 0;
      for (std::int64_t c = 0; c < d; ++c) acc += dor[c] * orow[c];
      delta[r] = acc;
    }
    // dS = P * (dP - delta) * scale (zero where masked, since P is zero there)
    for (std::int64_t r = 0; r < rows; ++r) {
      float* dpr = dp + r * cols;
      const float* pr_row = p + r * cols;
      const float dr = delta[r];
      for (std::int64_t c = 0; c < cols; ++c) dpr[c] = pr_row[c] * (dpr[c] - dr) * scale;
    }
    round_if(dp, rows * cols, pr.half);
    // dQ_block = dS K[0:cols];  dK[0:cols] += dS^T Q_block
    gemm_in_thread(GemmShape{rows, d, cols, false, false, cols, h.ld, h.ld}, dp, h.k,
                   dq + i0 * h.ld, false, pr.gemm);
    gemm_in_thread(GemmShape{cols, d, rows, true, false, cols, h.ld, d}, dp, at(h.q, i0 * h.ld),
                   dk_acc, true, pr.gemm);
  }
  for (std::int64_t r = 0; r < t; ++r) {
    std::copy(dk_acc + r * d, dk_acc + (r + 1) * d, dk + r * h.ld);
    std::copy(dv_acc + r * d, dv_acc + (r + 1) * d, dv + r * h.ld);
  }
}

// Runs fn(i, in_offset, out_offset) for every (batch, head) pair i = b * heads + h, the
// pairs spread over the threads; the offsets locate the head in the `in` and `out` layouts.
template <class Fn>
void for_each_head(const AttentionShape& s, const HeadLayout& in, const HeadLayout& out, Fn&& fn) {
  const std::int64_t pairs = s.batch * s.heads;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < pairs; ++i) {
    const std::int64_t b = i / s.heads, h = i % s.heads;
    fn(i, b * in.batch_stride + h * in.head_stride, b * out.batch_stride + h * out.head_stride);
  }
}

}  // namespace

void attention_forward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                       Operand v, const HeadLayout& out, AttentionOutput o, float* lse, float scale,
                       const AttentionPrecision& pr) {
  const int bytes = numerics::traits(o.format).storage_bytes;
  for_each_head(s, in, out, [&](std::int64_t i, std::int64_t a, std::int64_t ot) {
    const Head h{at(q, a), at(k, a), at(v, a), in.row_stride};
    const AttentionOutput oh{static_cast<char*>(o.data) + ot * bytes, o.format};
    forward_head(h, oh, out.row_stride, lse + i * s.t, s.t, s.d, scale, pr);
  });
}

void attention_backward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                        Operand v, const HeadLayout& out, Operand o, Operand d_o, const float* lse,
                        float* dq, float* dk, float* dv, float scale,
                        const AttentionPrecision& pr) {
  for_each_head(s, in, out, [&](std::int64_t i, std::int64_t a, std::int64_t ot) {
    const Head h{at(q, a), at(k, a), at(v, a), in.row_stride};
    backward_head(h, at(o, ot), at(d_o, ot), out.row_stride, lse + i * s.t, dq + a, dk + a, dv + a,
                  s.t, s.d, scale, pr);
  });
}

void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                       const AttentionPrecision& pr) {
  const AttentionShape s{bh, 1, t, d};
  const HeadLayout l = HeadLayout::dense(s);
  attention_forward(s, l, q, k, v, l, AttentionOutput{o, numerics::Format::float32}, lse, scale,
                    pr);
}

void attention_backward(const float* q, const float* k, const float* v, const float* o,
                        const float* lse, const float* d_o, float* dq, float* dk, float* dv,
                        std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                        const AttentionPrecision& pr) {
  const AttentionShape s{bh, 1, t, d};
  const HeadLayout l = HeadLayout::dense(s);
  attention_backward(s, l, q, k, v, l, o, d_o, lse, dq, dk, dv, scale, pr);
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
