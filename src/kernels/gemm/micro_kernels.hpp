#pragma once
// Internal: the register-blocked inner kernels of the blocked GEMM, one per ISA and route.
//
// An fp32 micro-kernel computes one mr x nr block of C from packed float32 panels:
// a[k * mr + r] is row r of the A panel at depth k, b[k * nr + j] column j of the B panel.
// Every element is one fused multiply-add chain in k order, started from the stored C block
// (load) or from zero:
//   c[r][j] = fma(a[kc-1][r], b[kc-1][j], ... fma(a[0][r], b[0][j], start) ...)
// so all ISAs (and the scalar twin) give the same bits.
//
// A bf16 pair micro-kernel (the AVX512-BF16 dot instruction) reads panels of bf16 pairs
// along k: the 32-bit word a[p * mr + r] holds row r at depths 2p (low half) and 2p + 1
// (high half), b[p * nr + j] likewise for column j. Per pair, in this order and each rounded
// to float32 with subnormal inputs and results read as zero:
//   c += a[2p+1] b[2p+1];  c += a[2p] b[2p]
// (the instruction's definition; gemm_bf16_ref is its scalar twin).
//
// The AMX micro-kernel (TDPBF16PS) reads A as 32 rows of pair words and B as pair rows of 32
// words, in chunks of 16 pairs, each chunk as amx_pairs.hpp defines it (gemm_amx_ref).
#include <cstdint>

#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels::gemm_detail {

using MicroKernel = void (*)(std::int64_t kc, const float* a, const float* b, float* c,
                             std::int64_t ldc, bool load);
using PairMicroKernel = void (*)(std::int64_t pairs, const std::uint32_t* a, const std::uint32_t* b,
                                 float* c, std::int64_t ldc, bool load);

struct MicroKernelInfo {
  GemmIsa isa;
  int mr, nr;  // block of C per call
  MicroKernel fn;
  PairMicroKernel pair_fn = nullptr;  // set for bf16 pair kernels (fn is then null)
  // Pair kernels: the pairs a call takes are padded with zero pairs to a multiple of
  // `pair_block`, and the depth blocks are multiples of 2 x pair_block (so a kernel's chunks
  // of pairs start where the reduction's do). `a_rows`: the A panel holds each row's pairs
  // consecutively (a[r * pairs + p]) instead of a[p * mr + r].
  int pair_block = 1;
  bool a_rows = false;
  void (*enter)() = nullptr;  // before a thread's calls (loads the AMX tile configuration)
  void (*leave)() = nullptr;  // after them
};

MicroKernelInfo micro_kernel_scalar();       // 4 x 8, std::fma
MicroKernelInfo micro_kernel_avx2();         // 6 x 16, AVX2 + FMA
MicroKernelInfo micro_kernel_avx512();       // 12 x 32, AVX-512F
MicroKernelInfo micro_kernel_avx512_bf16();  // 12 x 32, AVX512-BF16 pairs
MicroKernelInfo micro_kernel_amx();          // 32 x 32, AMX tiles (pairs padded to 16)

}  // namespace mantissa::kernels::gemm_detail
