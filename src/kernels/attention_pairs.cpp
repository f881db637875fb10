// The fused bf16 attention head: every product of a head on the AVX512-BF16 dot instruction
// (bf16_pair_product) or on AMX tiles (amx_pair_product), its operands converted to bf16 and
// laid out as pair words once per head rather than packed again for every product of every
// block.
#include <algorithm>

#include "attention_parts.hpp"
#include "gemm/pair_panels_avx512.hpp"
#include "mantissa/kernels/amx_pairs.hpp"
#include "mantissa/kernels/bf16_pairs.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "row_prefetch.hpp"

namespace mantissa::kernels::attention_detail {
namespace {

std::uint16_t* halves(int slot, std::int64_t n) {
  thread_local ScratchBuffer buffers[8];
  return buffers[slot].as<std::uint16_t>(static_cast<std::size_t>(std::max<std::int64_t>(n, 2)));
}
std::uint32_t* words(int slot, std::int64_t n) {
  thread_local ScratchBuffer buffers[9];
  return buffers[slot].as<std::uint32_t>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

std::int64_t even(std::int64_t n) {
  return n + n % 2;
}

// out[j * ldo + i] = x[i * ld + j] for the 32-bit values of x (rows x cols, ld apart), i <
// rows, j < cols, and out[j * ldo + i] = 0 for rows <= i < out_rows: in 16 x 16 blocks on
// AVX-512 (every CPU the pair kernels run on has AVX-512F/BW), else value by value.
template <class T>
void transpose32(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, T* out,
                 std::int64_t ldo, std::int64_t out_rows) {
  static_assert(sizeof(T) == 4);
  const numerics::CpuFeatures& f = numerics::cpu_features();
  if (f.avx512f && f.avx512bw) {
    gemm_detail::transpose_words_avx512(reinterpret_cast<const std::uint16_t*>(x), rows, cols,
                                        2 * ld, reinterpret_cast<std::uint32_t*>(out), ldo,
                                        out_rows);
    return;
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    T* o = out + j * ldo;
    for (std::int64_t i = 0; i < rows; ++i) o[i] = x[i * ld + j];
    std::fill(o + rows, o + out_rows, T{});
  }
}

// The pair words of bf16 rows x transposed: out[p * ldo + j] is word p of row j (t rows,
// dw words each), so a product reduces over the rows' own direction (d) with rows as
// columns. Rows t..ldo-1 are zero.
std::uint32_t* transposed_words(const Bf16Rows& x, std::int64_t t, std::int64_t dw,
                                std::int64_t ldo, int slot) {
  std::uint32_t* out = words(slot, dw * ldo);
  transpose32(reinterpret_cast<const std::uint32_t*>(x.p), t, dw, x.ld / 2, out, ldo, ldo);
  return out;
}

// Pairs of rows of bf16 rows x (t rows, n wide, ldx apart) interleaved, in scratch `slot`:
// (t + 1) / 2 pair rows of n words.
std::uint32_t* row_pairs(const std::uint16_t* x, std::int64_t t, std::int64_t n, std::int64_t ldx,
                         int slot) {
  std::uint32_t* out = words(slot, even(t) / 2 * n);
  interleave_row_pairs(x, t, n, ldx, out, n);
  return out;
}

const std::uint32_t* as_words(const std::uint16_t* x) {
  return reinterpret_cast<const std::uint32_t*>(x);
}

// Rows i0.. of bf16 rows x as the left operand of a product over the rows' pairs.
PairRows rows_from(const Bf16Rows& x, std::int64_t i0) {
  return {as_words(x.p + i0 * x.ld), x.ld / 2, 1};
}

// c (+)= a b on the head's units; the dot units skip what `band` says the causal mask zeroes
// (the tiles compute the whole product, whose entries the band keeps are the same).
void product(PairUnit unit, std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
             PairCols b, float* c, std::int64_t ldc, bool accumulate, PairBand band = {}) {
  if (unit == PairUnit::tiles) {
    amx_pair_product(m, n, pairs, a, b, c, ldc, accumulate);
  } else {
    bf16_pair_product(m, n, pairs, a, b, c, ldc, accumulate, band);
  }
}

// The bands of a block of query rows i0..: its scores need keys up to the row's own
// (columns_below), its probabilities and score gradients are zero past it (pairs_below), and
// taken transposed, a key's column is zero for the query rows before it (pairs_from).
PairBand keys_up_to_row(std::int64_t i0) {
  return {PairBand::Kind::columns_below, i0 + 1};
}
PairBand reduce_up_to_row(std::int64_t i0) {
  return {PairBand::Kind::pairs_below, i0 + 1};
}
PairBand rows_from_key(std::int64_t i0) {
  return {PairBand::Kind::pairs_from, i0};
}

// Pair words x (rows x cols, ld apart) transposed into scratch `slot`: out[j * ldo + p] =
// x[p * ld + j], pairs rows..ldo-1 zero.
std::uint32_t* transpose_words(const std::uint32_t* x, std::int64_t rows, std::int64_t cols,
                               std::int64_t ld, std::int64_t ldo, int slot) {
  std::uint32_t* out = words(slot, cols * ldo);
  transpose32(x, rows, cols, ld, out, ldo, ldo);
  return out;
}

// acc (t x d) = the transpose of acc_t (d x t, ld apart), into rows `ld_out` apart.
void store_transposed(const float* acc_t, std::int64_t t, std::int64_t d, std::int64_t ld,
                      float* out, std::int64_t ld_out) {
  transpose32(acc_t, d, t, ld, out, ld_out, d);
}

}  // namespace

void encode_rows(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                 numerics::Format f, void* out, std::int64_t ldo) {
  if (f == numerics::Format::bfloat16 && n % 2 == 0) {  // (odd rows would get a pad written)
    to_bf16_rows(x, rows, n, ldx, static_cast<std::uint16_t*>(out), ldo);
    return;
  }
  const int bytes = numerics::traits(f).storage_bytes;
  for (std::int64_t r = 0; r < rows; ++r) {
    prefetch_row_ahead(out, r, rows, ldo * bytes, n * bytes, true);
    numerics::encode_array(x + r * ldx, static_cast<std::size_t>(n), f,
                           static_cast<char*>(out) + r * ldo * bytes);
  }
}

bool pairs_can_run(const GemmPrecision& gemm, std::int64_t d, PairUnit unit) {
  return gemm.format == numerics::Format::bfloat16 && gemm.passes == 1 && d % 2 == 0 &&
         (unit == PairUnit::tiles ? amx_available() : bf16_pairs_available());
}

Bf16Rows bf16_rows(const HeadRows& x, std::int64_t t, std::int64_t d, int slot) {
  std::uint16_t* out = halves(slot, t * even(d));
  to_bf16_rows(x.p, t, d, x.ld, out, even(d));
  return {out, even(d)};
}

void forward_head_pairs(const PairHead& h, AttentionOutput o, std::int64_t ldo, float* lse,
                        std::int64_t t, std::int64_t d, float scale, const AttentionPrecision& pr,
                        bool to_bf16, PairUnit unit) {
  const std::int64_t dw = d / 2, tp = even(t);
  const std::uint32_t* k_t = transposed_words(h.k, t, dw, tp, 0);
  const std::uint32_t* v_pairs = row_pairs(h.v.p, t, d, h.v.ld, 1);
  float* s = sized(0, kBlock * t);
  float* tmp = sized(1, t);
  float* ob = sized(2, kBlock * d);
  std::uint16_t* p = halves(4, kBlock * tp);
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0), cols = i0 + rows, cw = even(cols) / 2;
    product(unit, rows, cols, dw, rows_from(h.q, i0), {k_t, tp}, s, cols, false,
            keys_up_to_row(i0));
    softmax_rows_bf16(s, i0, rows, cols, scale, pr, to_bf16, lse + i0, nullptr, tmp, false, p,
                      2 * cw);
    product(unit, rows, d, cw, {as_words(p), cw, 1}, {v_pairs, d}, ob, d, false,
            reduce_up_to_row(i0));
    encode_rows(ob, rows, d, d, o.format,
                static_cast<char*>(o.data) + i0 * ldo * numerics::traits(o.format).storage_bytes,
                ldo);
  }
}

void backward_head_pairs(const PairHead& h, const Bf16Rows& g, const HeadRows& o,
                         const HeadRows& d_o_plain, const float* lse, float* dq, float* dk,
                         float* dv, std::int64_t ld, std::int64_t t, std::int64_t d, float scale,
                         const AttentionPrecision& pr, bool to_bf16, PairUnit unit) {
  const std::int64_t dw = d / 2, tp = even(t), tw = tp / 2;
  const bool tiles = unit == PairUnit::tiles;
  const std::uint32_t* k_t = transposed_words(h.k, t, dw, tp, 0);
  const std::uint32_t* v_t = transposed_words(h.v, t, dw, tp, 1);
  const std::uint32_t* k_pairs = row_pairs(h.k.p, t, d, h.k.ld, 2);
  const std::uint32_t* q_pairs = row_pairs(h.q.p, t, d, h.q.ld, 3);
  const std::uint32_t* g_pairs = row_pairs(g.p, t, d, g.ld, 4);
  // Tiles: dO^T and Q^T as rows of pairs along the query rows (d rows of tw words), the left
  // operands of dV^T += dO^T P and dK^T += Q^T dS.
  const std::uint32_t* g_rows_t = tiles ? transpose_words(g_pairs, tw, d, d, tw, 7) : nullptr;
  const std::uint32_t* q_rows_t = tiles ? transpose_words(q_pairs, tw, d, d, tw, 8) : nullptr;
  float* p = sized(0, kBlock * t);
  float* dp = sized(1, kBlock * t);
  float* dk_acc = sized(2, tp * d);  // dK (t x d), or dK^T (d x tp) on tiles
  float* dv_acc = sized(3, tp * d);
  float* delta = sized(4, kBlock);
  std::uint16_t* pb = halves(4, kBlock * tp);
  std::uint16_t* sb = halves(5, kBlock * tp);
  std::uint32_t* p_pairs = words(5, kBlock / 2 * tp);
  std::uint32_t* s_pairs = words(6, kBlock / 2 * tp);
  std::fill(dk_acc, dk_acc + tp * d, 0.0f);
  std::fill(dv_acc, dv_acc + tp * d, 0.0f);
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, t - i0), cols = i0 + rows, cw = even(cols) / 2;
    const std::int64_t rw = even(rows) / 2;  // pair rows of the block's query rows
    product(unit, rows, cols, dw, rows_from(h.q, i0), {k_t, tp}, p, cols, false,
            keys_up_to_row(i0));
    // dV[0:cols] += P^T dO_block: P's rows paired, read pair-major (on tiles: dV^T += dO^T P).
    softmax_rows_bf16(p, i0, rows, cols, scale, pr, to_bf16, nullptr, lse + i0, nullptr, true, pb,
                      2 * cw);
    interleave_row_pairs(pb, rows, cols, 2 * cw, p_pairs, cols);
    if (tiles) {
      product(unit, d, cols, rw, {g_rows_t + i0 / 2, tw, 1}, {p_pairs, cols}, dv_acc, tp, true);
    } else {
      product(unit, cols, d, rw, {p_pairs, 1, cols}, {g_pairs + i0 / 2 * d, d}, dv_acc, d, true,
              rows_from_key(i0));
    }
    // dP = dO_block V[0:cols]^T
    product(unit, rows, cols, dw, rows_from(g, i0), {v_t, tp}, dp, cols, false, keys_up_to_row(i0));
    row_deltas(d_o_plain, o, i0, rows, d, delta);
    score_gradients_bf16_rows(dp, p, delta, i0, rows, cols, scale, pr, to_bf16, sb, 2 * cw);
    // dQ_block = dS K[0:cols];  dK[0:cols] += dS^T Q_block (on tiles: dK^T += Q^T dS)
    product(unit, rows, d, cw, {as_words(sb), cw, 1}, {k_pairs, d}, dq + i0 * ld, ld, false,
            reduce_up_to_row(i0));
    interleave_row_pairs(sb, rows, cols, 2 * cw, s_pairs, cols);
    if (tiles) {
      product(unit, d, cols, rw, {q_rows_t + i0 / 2, tw, 1}, {s_pairs, cols}, dk_acc, tp, true);
    } else {
      product(unit, cols, d, rw, {s_pairs, 1, cols}, {q_pairs + i0 / 2 * d, d}, dk_acc, d, true,
              rows_from_key(i0));
    }
  }
  if (tiles) {
    store_transposed(dk_acc, t, d, tp, dk, ld);
    store_transposed(dv_acc, t, d, tp, dv, ld);
    return;
  }
  for (std::int64_t r = 0; r < t; ++r) {
    std::copy(dk_acc + r * d, dk_acc + (r + 1) * d, dk + r * ld);
    std::copy(dv_acc + r * d, dv_acc + (r + 1) * d, dv + r * ld);
  }
}

}  // namespace mantissa::kernels::attention_detail
