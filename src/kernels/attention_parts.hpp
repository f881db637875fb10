#pragma once
// Internal: the pieces the attention kernels share (attention.cpp runs a head's products
// through the GEMM routes; attention_pairs.cpp runs them as bf16 pair products it packs
// itself).
#include <cstdint>

#include "mantissa/kernels/attention.hpp"
#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels::attention_detail {

// Query rows per block: scores exist for kBlock rows x (keys up to the block's last row).
constexpr std::int64_t kBlock = 64;

// Per-thread float scratch that only grows (slots 0..13; 12 and 13 for the route probe): no
// allocation once warm.
float* sized(int slot, std::int64_t n);

// A head's t x d operand as float32 rows `ld` apart.
struct HeadRows {
  const float* p;
  std::int64_t ld;
};
// Float rows (rows x n, ldx apart) rounded into rows of format f, ldo elements apart from
// `out` (nearest even, as numerics::encode_array): bfloat16 rows of even width in one call of
// to_bf16_rows, others row by row.
void encode_rows(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                 numerics::Format f, void* out, std::int64_t ldo);

// One head's operands as float32 rows.
struct Head {
  HeadRows q, k, v;
};

// x rounded to `f` in place (nothing for float32).
void round_if(float* x, std::int64_t n, numerics::Format f);

// Turns a block's raw scores s (rows x cols, leading dim cols; query rows i0.., keys
// 0..cols-1) into probabilities: scale, causal mask, softmax via the row log-sum-exp, the
// rounding the precision asks for, and `to_bf16` (products on bf16 values). Writes lse when
// `lse_out`, else uses `lse_in` (the backward's recomputation, bit-identical).
void softmax_rows(float* s, std::int64_t i0, std::int64_t rows, std::int64_t cols, float scale,
                  const AttentionPrecision& pr, bool to_bf16, float* lse_out, const float* lse_in,
                  float* tmp);

// dS = P * (dP - delta) * scale in place of dP for the block's query rows i0.. (rows x cols,
// leading dim cols), rounded to H and, with `to_bf16`, to bfloat16; +0 past each row's last
// key, where P is zero and dP is not read (a causal product may have left it unwritten).
void score_gradients(float* dp, const float* p, const float* delta, std::int64_t i0,
                     std::int64_t rows, std::int64_t cols, float scale,
                     const AttentionPrecision& pr, bool to_bf16);

// softmax_rows, then the probabilities as bf16 bits (rows `ldb` apart; entries cols..ldb-1
// zero), the pair kernels' operand. With p_out, p keeps the probabilities' float values
// (rounded as softmax_rows rounds them). Where the probabilities are rounded to bfloat16 and
// nothing else (H bfloat16, softmax in float32), the exp, the rounding and the bits are one
// pass (attention_rows.hpp); else softmax_rows and to_bf16_rows.
void softmax_rows_bf16(float* s, std::int64_t i0, std::int64_t rows, std::int64_t cols, float scale,
                       const AttentionPrecision& pr, bool to_bf16, float* lse_out,
                       const float* lse_in, float* tmp, bool p_out, std::uint16_t* bits,
                       std::int64_t ldb);

// score_gradients, then the score gradients as bf16 bits (rows `ldb` apart, entries
// cols..ldb-1 zero); one pass where H is bfloat16.
void score_gradients_bf16_rows(float* dp, const float* p, const float* delta, std::int64_t i0,
                               std::int64_t rows, std::int64_t cols, float scale,
                               const AttentionPrecision& pr, bool to_bf16, std::uint16_t* bits,
                               std::int64_t ldb);

// delta[r] = sum_c dO[r][c] o[r][c] for the block's rows.
void row_deltas(const HeadRows& d_o, const HeadRows& o, std::int64_t i0, std::int64_t rows,
                std::int64_t d, float* delta);

// A head's t x d operand as bf16 values, rows `ld` elements apart (ld even, rows 4-byte
// aligned): read in place as pair words.
struct Bf16Rows {
  const std::uint16_t* p;
  std::int64_t ld;
};
// One head's operands as bf16 rows.
struct PairHead {
  Bf16Rows q, k, v;
};

// Which units multiply a fused head's bf16 pair words: the AVX512-BF16 dot instruction
// (bf16_pair_product, the bf16 route) or AMX tiles (amx_pair_product, the amx route).
enum class PairUnit : std::uint8_t { dot, tiles };

// Whether one head can run as bf16 pair products on `unit` (attention_pairs.cpp): bf16 values
// in one pass, an even head width and the CPU's units.
bool pairs_can_run(const GemmPrecision& gemm, std::int64_t d, PairUnit unit);

// Float rows (bf16 values, or rounded to them here) as bf16 rows in the pair kernels' scratch
// `slot` (0..3), dense.
Bf16Rows bf16_rows(const HeadRows& x, std::int64_t t, std::int64_t d, int slot);

// The fused bf16 heads: like forward_head / backward_head of attention.cpp, every product
// on bf16_pair_product with operands laid out once per head. o rows are encoded in o.format;
// in the backward, g (bf16) feeds the products and o with d_o_plain (float) the row sums.
// On tiles, the products that sum over query rows (dV += P^T dO, dK += dS^T Q) run
// transposed (dV^T += dO^T P): the tiles read their left operand by rows only.
void forward_head_pairs(const PairHead& h, AttentionOutput o, std::int64_t ldo, float* lse,
                        std::int64_t t, std::int64_t d, float scale, const AttentionPrecision& pr,
                        bool to_bf16, PairUnit unit);
void backward_head_pairs(const PairHead& h, const Bf16Rows& g, const HeadRows& o,
                         const HeadRows& d_o_plain, const float* lse, float* dq, float* dk,
                         float* dv, std::int64_t ld, std::int64_t t, std::int64_t d, float scale,
                         const AttentionPrecision& pr, bool to_bf16, PairUnit unit);

}  // namespace mantissa::kernels::attention_detail
