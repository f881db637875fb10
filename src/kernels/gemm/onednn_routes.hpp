#pragma once
// Internal: the products that run inside oneDNN. The native route (bf16 matmul on AMX or
// AVX512-BF16, whichever oneDNN finds) and the plain fp32 matmul the benchmarks compare with.
#include <cstddef>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "passes.hpp"

namespace mantissa::kernels::gemm_detail {

// The product over the passes on bf16 units: operands that are not bf16 already (or that a
// pass splits) are encoded into bf16 panels of the concatenated inner dimension, exactly; the
// float32 result goes to the epilogue in blocks of rows.
void onednn_bf16_gemm(const GemmShape& s, const Operand& a, const Operand& b,
                      const PassList& passes, const GemmEpilogue& epilogue, bool all_threads);

// The product on oneDNN's fp32 matmul: operands not stored as float32 (or that a pass rounds)
// are decoded into float32 first; one pass at most (the fp32 route's passes).
void onednn_f32_gemm(const GemmShape& s, const Operand& a, const Operand& b, const PassList& passes,
                     const GemmEpilogue& epilogue, bool all_threads);

// How many rows of A and C the two routes above hand oneDNN at once: the whole product where
// its scratch (a copy of A's rows when A is not read in place, and C's rows; `row_bytes` a
// row) fits in 16 MiB, else blocks that fit it, never fewer than 512 rows. oneDNN runs best on
// the whole product: on an AMD Zen 3, 512-row blocks made a 1536 x 384 x 2048 weight gradient
// 1.35x slower.
std::int64_t onednn_block_rows(std::int64_t m, std::int64_t row_bytes);

// Frees the calling thread's copies of operands and results the two routes above made (B can
// be a copy of a whole operand); the next product on them allocates again.
void release_onednn_copies();
// The bytes those copies hold on the calling thread now.
std::size_t onednn_copies_bytes();

// oneDNN's sgemm on the calling thread (for small products inside a parallel region): float32
// operands, C (+)= A B in oneDNN's order of summation.
void onednn_sgemm_in_thread(const GemmShape& s, const float* a, const float* b, float* c,
                            bool accumulate);

// Asks oneDNN once whether it has a bf16 matmul here, and on which ISA.
NativeBf16 probe_native_bf16();

}  // namespace mantissa::kernels::gemm_detail
