#pragma once
// Small products on the AVX512-BF16 dot instruction for kernels that keep their operands
// packed as bf16 pairs themselves (the fused attention kernel): no per-call packing, no
// dispatch, the operands laid out once per head and read in place.
//
// A pair word holds two bf16 values consecutive along the reduction: element 2p in the low
// half, 2p + 1 in the high half. Each product follows the instruction's definition, the
// same as the bf16 GEMM route's (micro_kernels.hpp): per pair, in this order, each step
// rounded to float32 with subnormal inputs and results read as zero,
//   c += a[2p+1] b[2p+1];  c += a[2p] b[2p]
// starting from the stored c (accumulate) or from zero, pairs in increasing p.
#include <cstdint>

namespace mantissa::kernels {

// Left operand: the word of row r, pair p at data[r * row_stride + p * pair_stride], so both
// row-major pairs (pair_stride 1) and pairs laid out pair-major (row_stride 1) are read in
// place.
struct PairRows {
  const std::uint32_t* data = nullptr;
  std::int64_t row_stride = 0, pair_stride = 1;
};
// Right operand: the word of pair p, column j at data[p * ld + j].
struct PairCols {
  const std::uint32_t* data = nullptr;
  std::int64_t ld = 0;
};

// The part of a product that a causal mask leaves nonzero (attention's diagonal blocks), with
// `offset` o, for row i of c:
//   columns_below  only columns j < i + o are needed (the others may be left unwritten);
//   pairs_below    a's elements e >= i + o along the reduction are zero (pairs p with
//                  2p >= i + o are skipped);
//   pairs_from     a's elements e < i - o are zero (pairs p with 2p + 1 < i - o are skipped).
// The terms skipped are products with a zero factor, so every entry computed is the whole
// product's, bit for bit, unless a sum is -0 (a negative sum flushed to zero) where the whole
// product would add a +0 term and make it +0.
struct PairBand {
  enum class Kind : std::uint8_t { whole, columns_below, pairs_below, pairs_from };
  Kind kind = Kind::whole;
  std::int64_t offset = 0;
};

// The CPU has the dot instruction and the AVX-512 byte/word instructions these kernels use.
bool bf16_pairs_available();

// c[i * ldc + j] (for i < m, j < n) = (accumulate ? c : 0) + sum over pairs of a(i, p).b(p, j),
// within `band` (whole: everything). Throws mantissa::Error when !bf16_pairs_available().
void bf16_pair_product(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a, PairCols b,
                       float* c, std::int64_t ldc, bool accumulate, PairBand band = {});
// The scalar twin (bit for bit the same results), row by row within the band.
void bf16_pair_product_ref(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                           PairCols b, float* c, std::int64_t ldc, bool accumulate,
                           PairBand band = {});

// The columns [0, end) and pairs [first, last) rows [i, i + rows) need within `band`.
struct PairRange {
  std::int64_t end, first, last;
};
PairRange band_range(const PairBand& band, std::int64_t i, std::int64_t rows, std::int64_t n,
                     std::int64_t pairs);

// rows x n float32 values (rows ldx apart) as bfloat16 bits, rounded to nearest even (NaN
// stays NaN, made quiet), rows ldo apart; a row of odd length gets one zero after it, so
// every row is whole pair words. The twin is numerics::encode_array to bfloat16.
void to_bf16_rows(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                  std::uint16_t* out, std::int64_t ldo);

// Pairs of rows interleaved: out[p * ldo + j] = x[2p][j] | x[2p + 1][j] << 16 for j < n, an
// odd last row paired with zero: the layout that pairs values along the rows' direction.
void interleave_row_pairs(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                          std::int64_t ldx, std::uint32_t* out, std::int64_t ldo);
void interleave_row_pairs_ref(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                              std::int64_t ldx, std::uint32_t* out, std::int64_t ldo);

}  // namespace mantissa::kernels
