#pragma once
// Internal: the AMX tile bodies of amx_pairs.hpp and of the blocked GEMM's AMX micro-kernel
// (amx_tiles.cpp, compiled with -mamx-tile -mamx-bf16), entered only after amx_available().
//
// The tiles as these kernels configure them: tmm0..tmm3 a 32 x 32 block of C (four 16 x 16
// float32 tiles), tmm4 / tmm5 rows 0-15 / 16-31 of A (16 rows x 16 pair words), tmm6 / tmm7
// columns 0-15 / 16-31 of B (16 pairs x 16 columns of pair words).
#include <cstdint>

#include "mantissa/kernels/bf16_pairs.hpp"

namespace mantissa::kernels::detail {

// Loads this thread's tile configuration (another library's AMX code may have replaced it
// since), and releases the tiles (their state then costs nothing to save).
void amx_load_tiles();
void amx_release_tiles();

// amx_pair_product on the tiles; a.pair_stride == 1. Loads the configuration itself.
void amx_pair_product_tiles(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                            PairCols b, float* c, std::int64_t ldc, bool accumulate);

// The GEMM micro-kernel: the 32 x 32 block c (rows ldc floats apart) = (load ? c : 0) +
// A B over `pairs` pair words (a multiple of 16), A as 32 rows of `pairs` words each, B as
// `pairs` rows of 32 words. The configuration must be loaded (amx_load_tiles).
void amx_micro_kernel(std::int64_t pairs, const std::uint32_t* a, const std::uint32_t* b, float* c,
                      std::int64_t ldc, bool load);

}  // namespace mantissa::kernels::detail
