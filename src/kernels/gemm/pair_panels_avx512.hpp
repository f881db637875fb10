#pragma once
// Internal: pair panels from bfloat16 storage on AVX-512 (pair_panels_avx512.cpp, compiled
// with -mavx512f -mavx512bw), for the two layouts whose scalar form reads or writes across
// lines: entered by pair_panel_bf16 (packing.hpp) only where the active SIMD path is avx512.
#include <cstdint>

namespace mantissa::kernels::gemm_detail {

// Pair words transposed: out[j * ldo + i] = x_i[2j] | x_i[2j + 1] << 16 for i < rows,
// j < cols, where x_i = x + i * ld (16-bit values, any alignment), and out[j * ldo + i] = 0
// for rows <= i < out_rows (out_rows >= rows).
void transpose_words_avx512(const std::uint16_t* x, std::int64_t rows, std::int64_t cols,
                            std::int64_t ld, std::uint32_t* out, std::int64_t ldo,
                            std::int64_t out_rows);

// Pairs of two depth rows, line by line, transposed: dst[l * ldd + p] = x[2p][l] |
// x[2p + 1][l] << 16 for l < lines, p < pairs, where x[k] = base + k * ld (16-bit values) and
// row 2p + 1 is read as zero when 2p + 1 >= kc.
void interleave_rows_transposed_avx512(const std::uint16_t* base, std::int64_t ld, std::int64_t kc,
                                       std::int64_t lines, std::uint32_t* dst, std::int64_t ldd);

// Every pair panel of `width` columns over columns [0, cols) of two depth rows at a time, in
// one pass along the rows (each row read once, contiguously): panel q at dst + q * padded *
// width holds dst[p * width + j] = x[2p][q * width + j] | x[2p + 1][q * width + j] << 16,
// where x[k] = base + k * ld (16-bit values) and row 2p + 1 is read as zero when 2p + 1 >= kc;
// zero for columns past cols (to the last panel's end) and pairs past kc's (to `padded`).
void pair_panels_across_avx512(const std::uint16_t* base, std::int64_t ld, std::int64_t kc,
                               std::int64_t cols, int width, std::int64_t padded,
                               std::uint32_t* dst);

}  // namespace mantissa::kernels::gemm_detail
