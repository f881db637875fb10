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

// The CPU has the dot instruction and the AVX-512 byte/word instructions these kernels use.
bool bf16_pairs_available();

// c[i * ldc + j] (for i < m, j < n) = (accumulate ? c : 0) + sum over pairs of a(i, p).b(p, j).
// Throws mantissa::Error when !bf16_pairs_available().
void bf16_pair_product(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a, PairCols b,
                       float* c, std::int64_t ldc, bool accumulate);
// The scalar twin (bit for bit the same results).
void bf16_pair_product_ref(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                           PairCols b, float* c, std::int64_t ldc, bool accumulate);

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
