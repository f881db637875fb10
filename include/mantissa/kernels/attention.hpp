#pragma once
// Fused causal self-attention. Blockwise: scores exist only for one block of query rows at a
// time (block x T), never as a T x T matrix per head; the backward recomputes them from the
// saved row log-sum-exp. Heads run in parallel (OpenMP), each thread's blocks staying in its
// cache. Heads are read and written in place through strides, so q, k and v can be column
// ranges of one fused qkv projection [B, T, 3C] and the output the [B, T, C] rows the next
// projection reads: no transposes or copies around the kernel.
//
// q, k, v, o and the output gradient may be stored in any format (packed H under a half
// policy): the products read them through the GEMM, which decodes while packing, and rows
// needed elementwise are decoded a block at a time. The products follow the GEMM route and
// precision_opt_level of `precision.gemm` like every matmul-class op.
#include <cstdint>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

struct AttentionPrecision {
  numerics::Format half = numerics::Format::float32;  // probabilities and score gradients
                                                      // are rounded to it before products
  bool softmax_in_half = false;                       // round scores to `half` before softmax
  GemmPrecision gemm;                                 // how the products run
};

struct AttentionShape {
  std::int64_t batch = 1, heads = 1, t = 0, d = 0;
};

// Where head h of batch b lives: t rows of d elements starting at
// base + b * batch_stride + h * head_stride, consecutive rows row_stride apart.
struct HeadLayout {
  std::int64_t row_stride = 0, head_stride = 0, batch_stride = 0;
  // [batch, heads, t, d] stored densely.
  static HeadLayout dense(const AttentionShape& s) { return {s.d, s.t * s.d, s.heads * s.t * s.d}; }
  // Head h as columns [h d, (h + 1) d) of rows `width` elements wide: [batch, t, width].
  static HeadLayout interleaved(const AttentionShape& s, std::int64_t width) {
    return {width, s.d, s.t * width};
  }
};

// Where a result goes: elements of `format` from `data` on.
struct AttentionOutput {
  void* data = nullptr;
  numerics::Format format = numerics::Format::float32;
};

// o = softmax(scale * q k^T + causal mask) v per head, written in o's format; lse
// [batch * heads, t] (dense float32) gets the row log-sum-exp of the scores. q, k, v use
// layout `in`; o uses `out`.
void attention_forward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                       Operand v, const HeadLayout& out, AttentionOutput o, float* lse, float scale,
                       const AttentionPrecision& precision = {});

// Where the gradients of q, k and v go (layout `in`, like the inputs): elements of `format`,
// the float32 values rounded to it (nearest even) as each head finishes.
struct AttentionGrads {
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  numerics::Format format = numerics::Format::float32;
};

// Gradients for q, k, v (overwritten) from d_o (layout `out`, like o), recomputing
// probabilities block by block.
void attention_backward(const AttentionShape& s, const HeadLayout& in, Operand q, Operand k,
                        Operand v, const HeadLayout& out, Operand o, Operand d_o, const float* lse,
                        const AttentionGrads& grads, float scale,
                        const AttentionPrecision& precision = {});

// Dense [bh, t, d] float32 forms of the two above.
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                       const AttentionPrecision& precision = {});
void attention_backward(const float* q, const float* k, const float* v, const float* o,
                        const float* lse, const float* d_o, float* dq, float* dk, float* dv,
                        std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                        const AttentionPrecision& precision = {});

// The naive twin: full T x T scores per head, in double; dense [bh, t, d].
void attention_forward_ref(const float* q, const float* k, const float* v, float* o,
                           std::int64_t bh, std::int64_t t, std::int64_t d, float scale);

}  // namespace mantissa::kernels
