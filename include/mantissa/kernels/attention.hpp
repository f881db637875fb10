#pragma once
// Fused causal self-attention on float32 buffers. Blockwise: scores exist only for one block
// of query rows at a time (block x T), never as a T x T matrix per head; the backward
// recomputes them from the saved row log-sum-exp. Heads run in parallel (OpenMP), each
// thread's blocks staying in its cache. Heads are read and written in place through strides,
// so q, k and v can be column ranges of one fused qkv projection [B, T, 3C] and the output
// the [B, T, C] rows the next projection reads: no transposes or copies around the kernel.
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

struct AttentionPrecision {
  numerics::Format half = numerics::Format::float32;  // probabilities and score gradients
                                                      // are rounded to it before products
  bool softmax_in_half = false;                       // round scores to `half` before softmax
};

struct AttentionShape {
  std::int64_t batch = 1, heads = 1, t = 0, d = 0;
};

// Where head h of batch b lives: t rows of d floats starting at
// base + b * batch_stride + h * head_stride, consecutive rows row_stride apart.
struct HeadLayout {
  std::int64_t row_stride = 0, head_stride = 0, batch_stride = 0;
  // [batch, heads, t, d] stored densely.
  static HeadLayout dense(const AttentionShape& s) { return {s.d, s.t * s.d, s.heads * s.t * s.d}; }
  // Head h as columns [h d, (h + 1) d) of rows `width` floats wide: [batch, t, width].
  static HeadLayout interleaved(const AttentionShape& s, std::int64_t width) {
    return {width, s.d, s.t * width};
  }
};

// o = softmax(scale * q k^T + causal mask) v per head; lse [batch * heads, t] (dense) gets
// the row log-sum-exp of the scores. q, k, v use layout `in`; o uses `out`.
void attention_forward(const AttentionShape& s, const HeadLayout& in, const float* q,
                       const float* k, const float* v, const HeadLayout& out, float* o, float* lse,
                       float scale, const AttentionPrecision& precision = {});

// Gradients for q, k, v (overwritten; layout `in`, like the inputs) from d_o (layout `out`,
// like o), recomputing probabilities block by block.
void attention_backward(const AttentionShape& s, const HeadLayout& in, const float* q,
                        const float* k, const float* v, const HeadLayout& out, const float* o,
                        const float* d_o, const float* lse, float* dq, float* dk, float* dv,
                        float scale, const AttentionPrecision& precision = {});

// Dense [bh, t, d] forms of the two above.
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
