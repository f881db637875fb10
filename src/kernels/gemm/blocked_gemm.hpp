#pragma once
// Internal: the fp32 FMA route. A blocked GEMM in the layout of Goto and van de Geijn: row
// chunks of C, column panels of B packed per chunk and depth block, A blocks packed per
// thread, register-blocked micro-kernels. The threads share a chunk as a grid of row and
// column parts and each packs what it reads itself (no thread waits for another inside a
// product). Each finished block of C goes to the epilogue while it is still in cache.
#include <cstddef>

#include "mantissa/kernels/gemm.hpp"
#include "micro_kernels.hpp"
#include "passes.hpp"

namespace mantissa::kernels::gemm_detail {

// Which multiply-add the micro-kernels use.
enum class DotUnit : std::uint8_t {
  fp32_fma,    // the active ISA's fp32 FMA kernel (active_gemm_isa())
  bf16_pairs,  // the AVX512-BF16 dot kernel: every pass's parts must be bf16 values
  amx_tiles,   // the AMX tile kernel: bf16 values likewise
};

// The product over the passes' concatenated inner dimension; all OpenMP threads when
// `all_threads` (and not already inside a parallel region), else the calling thread.
void blocked_gemm(const GemmShape& s, const Operand& a, const Operand& b, const PassList& passes,
                  const GemmEpilogue& epilogue, bool all_threads, DotUnit unit = DotUnit::fp32_fma);

// Frees the calling thread's bfloat16 copies of operands stored otherwise (a pair kernel's
// PartCopies, each as large as its operand); the next product that needs them allocates again.
void release_operand_copies();
// The bytes those copies hold on the calling thread now.
std::size_t operand_copies_bytes();

// The micro-kernel of the active ISA (active_gemm_isa()).
MicroKernelInfo active_micro_kernel();

}  // namespace mantissa::kernels::gemm_detail
