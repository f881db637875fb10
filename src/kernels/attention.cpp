#include "mantissa/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attention_parts.hpp"
#include "gemm/onednn_routes.hpp"
#include "lane_sums.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"
#include "row_prefetch.hpp"
#include "vector_exp.hpp"

namespace mantissa::kernels {
namespace attention_detail {

float* sized(int slot, std::int64_t n) {
  thread_local ScratchBuffer buffers[14];
  return buffers[slot].as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

void round_if(float* x, std::int64_t n, numerics::Format f) {
  if (f != numerics::Format::float32) numerics::round_to_format(x, static_cast<std::size_t>(n), f);
}

void softmax_rows(float* s, std::int64_t i0, std::int64_t rows, std::int64_t cols, float scale,
                  const AttentionPrecision& pr, bool to_bf16, float* lse_out, const float* lse_in,
                  float* tmp) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* sr = s + r * cols;
    const std::int64_t valid = i0 + r + 1;  // keys 0..i0+r
    for (std::int64_t c = 0; c < valid; ++c) sr[c] *= scale;
    if (pr.softmax_in_half) round_if(sr, valid, pr.half);
    float l;
    if (lse_out != nullptr) {
      const float m = detail::row_max(sr, valid);
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
  if (to_bf16) round_if(s, rows * cols, numerics::Format::bfloat16);
}

void score_gradients(float* dp, const float* p, const float* delta, std::int64_t i0,
                     std::int64_t rows, std::int64_t cols, float scale,
                     const AttentionPrecision& pr, bool to_bf16) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* dpr = dp + r * cols;
    const float* pr_row = p + r * cols;
    const float dr = delta[r];
    const std::int64_t valid = std::min(i0 + r + 1, cols);  // keys 0..i0+r
    for (std::int64_t c = 0; c < valid; ++c) dpr[c] = pr_row[c] * (dpr[c] - dr) * scale;
    std::fill(dpr + valid, dpr + cols, 0.0f);
  }
  round_if(dp, rows * cols, pr.half);
  if (to_bf16) round_if(dp, rows * cols, numerics::Format::bfloat16);
}

void row_deltas(const HeadRows& d_o, const HeadRows& o, std::int64_t i0, std::int64_t rows,
                std::int64_t d, float* delta) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* dor = d_o.p + (i0 + r) * d_o.ld;
    const float* orow = o.p + (i0 + r) * o.ld;
    delta[r] =
        detail::lane_sums<1>(d, [&](std::int64_t c) { return std::array{dor[c] * orow[c]}; })[0];
  }
}

}  // namespace attention_detail

namespace {
using namespace attention_detail;

Operand at(const Operand& x, std::int64_t elements) {
  return {static_cast<const char*>(x.data) + elements * numerics::traits(x.format).storage_bytes,
          x.format};
}

// How a head's products run. At POL 2, float16 / cbfloat16 operands are rounded to bfloat16
// first (the one pass of every route), so the products multiply bf16 values. Every product of
// a head takes the head's route (chosen per head shape by measurement, head_products below): the
// fp32 routes multiply the head's float32 rows in the calling thread (oneDNN's sgemm, or
// mantissa's GEMM), onednn_bf16 through oneDNN's bf16 matmul, and bf16 and amx through
// mantissa's GEMM or, for one-pass bf16 values, as the fused pair kernels of
// attention_pairs.cpp (on the dot instruction or on AMX tiles).
struct Products {
  GemmPrecision gemm;
  bool to_bf16 = false;  // POL 2, a split format

  explicit Products(const AttentionPrecision& pr) : gemm(pr.gemm) {
    const bool split =
        gemm.format == numerics::Format::float16 || gemm.format == numerics::Format::cbfloat16;
    to_bf16 = split && gemm.passes == 1;
    if (to_bf16) gemm.format = numerics::Format::bfloat16;  // the operands are bf16 values now
  }
  // An operand computed here (probabilities, score gradients): what the product reads.
  void prepare(float* x, std::int64_t n) const {
    if (to_bf16) round_if(x, n, numerics::Format::bfloat16);
  }
  void operator()(const GemmShape& s, const float* a, const float* b, float* c,
                  bool accumulate) const {
    if (gemm.route == MatmulRoute::onednn_fp32) {
      gemm_detail::onednn_sgemm_in_thread(s, a, b, c, accumulate);
    } else {
      gemm_in_thread(s, a, b, c, accumulate, gemm);
    }
  }
  // Whether a head of width d runs as the fused bf16 pair kernels: on the dot instruction
  // (route bf16) or on AMX tiles (route amx).
  PairUnit unit() const { return gemm.route == MatmulRoute::amx ? PairUnit::tiles : PairUnit::dot; }
  bool pairs(std::int64_t d) const {
    return (gemm.route == MatmulRoute::bf16 || gemm.route == MatmulRoute::amx) &&
           pairs_can_run(gemm, d, unit());
  }
  // The same products on `route`.
  Products on(MatmulRoute route) const {
    Products p = *this;
    p.gemm.route = route;
    return p;
  }
};

// A head's t x d operand as float32 rows `ld` apart: the stored rows themselves when they
// are float32 (and need no rounding), else decoded (and rounded for the product) into the
// thread's scratch `slot`, dense.
HeadRows head_rows(const Operand& x, std::int64_t ld, std::int64_t t, std::int64_t d,
                   const Products& pr, int slot) {
  if (x.format == numerics::Format::float32 && !pr.to_bf16) {
    return {static_cast<const float*>(x.data), ld};
  }
  float* out = sized(slot, t * d);
  const int bytes = numerics::traits(x.format).storage_bytes;
  for (std::int64_t r = 0; r < t; ++r) {
    prefetch_row_ahead(x.data, r, t, ld * bytes, d * bytes, false);
    numerics::decode_array(static_cast<const char*>(x.data) + r * ld * bytes,
                           static_cast<std::size_t>(d), x.format, out + r * d);
  }
  pr.prepare(out, t * d);
  return {out, d};
}

// A head's operand as the pair kernels read it: stored bf16 rows in place (no decoding and
// encoding again) where their layout allows pair words, else decoded into float scratch
// `slot` (head_rows) and converted into pair scratch `pair_slot`.
Bf16Rows operand_pair_rows(const Operand& x, std::int64_t ld, std::int64_t t, std::int64_t d,
                           const Products& pr, int slot, int pair_slot) {
  if (x.format == numerics::Format::bfloat16 && ld % 2 == 0 &&
      reinterpret_cast<std::uintptr_t>(x.data) % 4 == 0) {
    return {static_cast<const std::uint16_t*>(x.data), ld};
  }
  return bf16_rows(head_rows(x, ld, t, d, pr, slot), t, d, pair_slot);
}

void forward_head(const Head& h, AttentionOutput o, std::int64_t ldo, float* lse, std::int64_t t,
                  std::int64_t d, float scale, const AttentionPrecision& pr, const Products& mm) {
  float* s = sized(0, kBlock * t);
  float* tmp = sized(1, t);
  float* ob = sized(2, kBlock * d);
  const int bytes = numerics::traits(o.format).storage_bytes;
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0);
    const std::int64_t cols = i0 + rows;  // causal: keys up to the block's last row
    mm(GemmShape{rows, cols, d, false, true, h.q.ld, h.k.ld, cols}, h.q.p + i0 * h.q.ld, h.k.p, s,
       false);
    softmax_rows(s, i0, rows, cols, scale, pr, mm.to_bf16, lse + i0, nullptr, tmp);
    mm(GemmShape{rows, d, cols, false, false, cols, h.v.ld, d}, s, h.v.p, ob, false);
    encode_rows(ob, rows, d, d, o.format, static_cast<char*>(o.data) + i0 * ldo * bytes, ldo);
  }
}

// dq is written in place (layout ld); dk and dv are summed over blocks in dense scratch and
// then stored (layout ld).
// d_o feeds the products; d_o_plain (the same rows unrounded for them) and o give the row
// sums delta = sum_c dO o.
void backward_head(const Head& h, const HeadRows& o, const HeadRows& d_o, const HeadRows& d_o_plain,
                   const float* lse, float* dq, float* dk, float* dv, std::int64_t ld,
                   std::int64_t t, std::int64_t d, float scale, const AttentionPrecision& pr,
                   const Products& mm) {
  float* p = sized(0, kBlock * t);
  float* dp = sized(1, kBlock * t);
  float* dk_acc = sized(2, t * d);
  float* dv_acc = sized(3, t * d);
  float* delta = sized(4, kBlock);
  std::fill(dk_acc, dk_acc + t * d, 0.0f);
  std::fill(dv_acc, dv_acc + t * d, 0.0f);
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0);
    const std::int64_t cols = i0 + rows;
    mm(GemmShape{rows, cols, d, false, true, h.q.ld, h.k.ld, cols}, h.q.p + i0 * h.q.ld, h.k.p, p,
       false);
    softmax_rows(p, i0, rows, cols, scale, pr, mm.to_bf16, nullptr, lse + i0, nullptr);
    const float* dob = d_o.p + i0 * d_o.ld;
    // dV[0:cols] += P^T dO_block
    mm(GemmShape{cols, d, rows, true, false, cols, d_o.ld, d}, p, dob, dv_acc, true);
    // dP = dO_block V[0:cols]^T
    mm(GemmShape{rows, cols, d, false, true, d_o.ld, h.v.ld, cols}, dob, h.v.p, dp, false);
    row_deltas(d_o_plain, o, i0, rows, d, delta);
    score_gradients(dp, p, delta, i0, rows, cols, scale, pr, mm.to_bf16);
    // dQ_block = dS K[0:cols];  dK[0:cols] += dS^T Q_block
    mm(GemmShape{rows, d, cols, false, false, cols, h.k.ld, ld}, dp, h.k.p, dq + i0 * ld, false);
    mm(GemmShape{cols, d, rows, true, false, cols, h.q.ld, d}, dp, h.q.p + i0 * h.q.ld, dk_acc,
       true);
  }
  for (std::int64_t r = 0; r < t; ++r) {
    std::copy(dk_acc + r * d, dk_acc + (r + 1) * d, dk + r * ld);
    std::copy(dv_acc + r * d, dv_acc + (r + 1) * d, dv + r * ld);
  }
}

// One head's q, k and v as stored (t rows `ld` apart), read as float rows or bf16 rows
// depending on the route the head takes.
struct HeadOperands {
  Operand q, k, v;
  std::int64_t ld;
  Head rows(const AttentionShape& s, const Products& mm) const {
    return {head_rows(q, ld, s.t, s.d, mm, 5), head_rows(k, ld, s.t, s.d, mm, 6),
            head_rows(v, ld, s.t, s.d, mm, 7)};
  }
  PairHead pair_rows(const AttentionShape& s, const Products& mm) const {
    return {operand_pair_rows(q, ld, s.t, s.d, mm, 5, 0),
            operand_pair_rows(k, ld, s.t, s.d, mm, 6, 1),
            operand_pair_rows(v, ld, s.t, s.d, mm, 7, 2)};
  }
};

// One forward head on the products `mm`: the fused pair kernels reading the operands as
// bf16 rows where they can run, else forward_head on float rows.
void run_forward_head(const AttentionShape& s, const HeadOperands& ops, AttentionOutput o,
                      std::int64_t ldo, float* lse, float scale, const AttentionPrecision& pr,
                      const Products& mm) {
  if (mm.pairs(s.d)) {
    forward_head_pairs(ops.pair_rows(s, mm), o, ldo, lse, s.t, s.d, scale, pr, mm.to_bf16,
                       mm.unit());
  } else {
    forward_head(ops.rows(s, mm), o, ldo, lse, s.t, s.d, scale, pr, mm);
  }
}

// The route every product of a head of this shape takes: under automatic, chosen like a
// product's (gemm_route.hpp) with one head's forward pass as the probe, so the fused bf16
// head competes as a whole against the products of every other route.
Products head_products(const AttentionShape& s, const Products& mm, const HeadOperands& ops,
                       float scale, const AttentionPrecision& pr) {
  GemmKey key{s.t, s.t, s.d, false, true, mm.gemm.format, mm.gemm.passes, false};
  key.attention_head = true;
  const MatmulRoute route = choose_route(key, mm.gemm.route, [&](MatmulRoute r) {
    float* o = sized(12, s.t * s.d);  // timed into scratch
    run_forward_head(s, ops, {o, numerics::Format::float32}, s.d, sized(13, s.t), scale, pr,
                     mm.on(r));
  });
  return mm.on(route);
}

// Runs fn(i, in_offset, out_offset) for every (batch, head) pair i = b * heads + h, the
// pairs handed to the threads one at a time as they come free (a head's work is its own, so
// which thread runs it changes no bits; a thread the machine slows takes fewer heads instead
// of holding the others at the end); the offsets locate the head in the `in` and `out`
// layouts.
template <class Fn>
void for_each_head(const AttentionShape& s, const HeadLayout& in, const HeadLayout& out, Fn&& fn) {
  const std::int64_t pairs = s.batch * s.heads;
  FirstError error;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < pairs; ++i) {
    const std::int64_t b = i / s.heads, h = i % s.heads;
    error.run([&] {
      fn(i, b * in.batch_stride + h * in.head_stride, b * out.batch_stride + h * out.head_stride);
    });
  }
  error.rethrow();
}

}  // namespace

void attention_forward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                       Operand v, const HeadLayout& out, AttentionOutput o, float* lse, float scale,
                       const AttentionPrecision& pr) {
  const Products mm(pr);
  const int bytes = numerics::traits(o.format).storage_bytes;
  for_each_head(s, in, out, [&](std::int64_t i, std::int64_t a, std::int64_t ot) {
    const HeadOperands ops{at(q, a), at(k, a), at(v, a), in.row_stride};
    const AttentionOutput oh{static_cast<char*>(o.data) + ot * bytes, o.format};
    run_forward_head(s, ops, oh, out.row_stride, lse + i * s.t, scale, pr,
                     head_products(s, mm, ops, scale, pr));
  });
}

// A head's gradients: written straight into float32 results, else made in the thread's
// dense float scratch and rounded into the results' format when the head is done.
class HeadGrads {
 public:
  HeadGrads(const AttentionGrads& g, std::int64_t at, std::int64_t ld, const AttentionShape& s)
      : g_(g), at_(at), ld_(ld), t_(s.t), d_(s.d) {
    if (direct()) {
      for (int i = 0; i < 3; ++i) rows_[i] = static_cast<float*>(target(i)) + at;
      return;
    }
    thread_local ScratchBuffer scratch[3];
    for (int i = 0; i < 3; ++i) {
      rows_[i] = scratch[i].as<float>(static_cast<std::size_t>(std::max<std::int64_t>(t_ * d_, 1)));
    }
  }
  float* dq() const { return rows_[0]; }
  float* dk() const { return rows_[1]; }
  float* dv() const { return rows_[2]; }
  // The rows' leading dimension while the head runs.
  std::int64_t ld() const { return direct() ? ld_ : d_; }
  // The head's rows into the results (nothing to do for float32).
  void finish() const {
    if (direct()) return;
    const int bytes = numerics::traits(g_.format).storage_bytes;
    for (int i = 0; i < 3; ++i) {
      encode_rows(rows_[i], t_, d_, d_, g_.format, static_cast<char*>(target(i)) + at_ * bytes,
                  ld_);
    }
  }

 private:
  bool direct() const { return g_.format == numerics::Format::float32; }
  void* target(int i) const { return i == 0 ? g_.dq : i == 1 ? g_.dk : g_.dv; }
  const AttentionGrads& g_;
  std::int64_t at_, ld_, t_, d_;
  float* rows_[3] = {};
};

void attention_backward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                        Operand v, const HeadLayout& out, Operand o, Operand d_o, const float* lse,
                        const AttentionGrads& grads, float scale, const AttentionPrecision& pr) {
  const Products mm(pr);
  // o (and dO where it is summed, not multiplied) are read as stored, never rounded for a
  // product.
  AttentionPrecision plain = pr;
  plain.gemm.format = numerics::Format::float32;
  const Products as_stored(plain);
  for_each_head(s, in, out, [&](std::int64_t i, std::int64_t a, std::int64_t ot) {
    const std::int64_t ld = in.row_stride, ldo = out.row_stride;
    const HeadOperands ops{at(q, a), at(k, a), at(v, a), ld};
    const Products route = head_products(s, mm, ops, scale, pr);
    const HeadRows o_rows = head_rows(at(o, ot), ldo, s.t, s.d, as_stored, 8);
    const HeadGrads d(grads, a, ld, s);
    if (route.pairs(s.d)) {
      backward_head_pairs(
          ops.pair_rows(s, route), operand_pair_rows(at(d_o, ot), ldo, s.t, s.d, route, 9, 3),
          o_rows, head_rows(at(d_o, ot), ldo, s.t, s.d, as_stored, 10), lse + i * s.t, d.dq(),
          d.dk(), d.dv(), d.ld(), s.t, s.d, scale, pr, route.to_bf16, route.unit());
    } else {
      const HeadRows g = head_rows(at(d_o, ot), ldo, s.t, s.d, route, 9);
      const HeadRows g_plain =
          route.to_bf16 ? head_rows(at(d_o, ot), ldo, s.t, s.d, as_stored, 10) : g;
      backward_head(ops.rows(s, route), o_rows, g, g_plain, lse + i * s.t, d.dq(), d.dk(), d.dv(),
                    d.ld(), s.t, s.d, scale, pr, route);
    }
    d.finish();
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
  attention_backward(s, l, q, k, v, l, o, d_o, lse, AttentionGrads{dq, dk, dv}, scale, pr);
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
