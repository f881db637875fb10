#pragma once
// Internal: the AVX-512 bodies of bf16_pairs.hpp (bf16_pairs_avx512.cpp, compiled with
// -mavx512f -mavx512bw -mavx512bf16), entered only after bf16_pairs_available().
#include "mantissa/kernels/bf16_pairs.hpp"

namespace mantissa::kernels::detail {

void bf16_pair_product_avx512(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                              PairCols b, float* c, std::int64_t ldc, bool accumulate,
                              PairBand band);
void to_bf16_rows_avx512(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                         std::uint16_t* out, std::int64_t ldo);
void interleave_row_pairs_avx512(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                                 std::int64_t ldx, std::uint32_t* out, std::int64_t ldo);

}  // namespace mantissa::kernels::detail
