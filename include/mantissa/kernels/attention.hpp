#pragma once
// Fused causal self-attention on float32 buffers [BH, T, D] (batch x heads flattened).
// Blockwise: scores exist only for one block of query rows at a time (block x T), never as a
// T x T matrix per head; the backward recomputes them from the saved row log-sum-exp.
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

struct AttentionPrecision {
  numerics::Format half = numerics::Format::float32;  // probabilities and score gradients
                                                      // are rounded to it before products
  bool softmax_in_half = false;                       // round scores to `half` before softmax
};

// o = softmax(scale * q k^T + causal mask) v; lse[bh, t] = row log-sum-exp of the scores.
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                       const AttentionPrecision& precision = {});
// Gradients for q, k, v (overwritten) from do, recomputing probabilities block by block.
void attention_backward(const float* q, const float* k, const float* v, const float* o,
                        const float* lse, const float* d_o, float* dq, float* dk, float* dv,
                        std::int64_t bh, std::int64_t t, std::int64_t d, float scale,
                        const AttentionPrecision& precision = {});

// The naive twin: full T x T scores per head, in double.
void attention_forward_ref(const float* q, const float* k, const float* v, float* o,
                           std::int64_t bh, std::int64_t t, std::int64_t d, float scale);

}  // namespace mantissa::kernels
