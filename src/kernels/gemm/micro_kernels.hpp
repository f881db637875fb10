#pragma once
// Internal: the register-blocked inner kernels of the fp32 FMA GEMM, one per ISA.
//
// A micro-kernel computes one mr x nr block of C from packed panels: a[k * mr + r] is row r of
// the A panel at depth k, b[k * nr + j] column j of the B panel. Every element is one fused
// multiply-add chain in k order, started from the stored C block (load) or from zero:
//   c[r][j] = fma(a[kc-1][r], b[kc-1][j], ... fma(a[0][r], b[0][j], start) ...)
// so all ISAs (and the scalar twin) give the same bits.
#include <cstdint>

#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels::gemm_detail {

using MicroKernel = void (*)(std::int64_t kc, const float* a, const float* b, float* c,
                             std::int64_t ldc, bool load);

struct MicroKernelInfo {
  GemmIsa isa;
  int mr, nr;  // block of C per call
  MicroKernel fn;
};

MicroKernelInfo micro_kernel_scalar();  // 4 x 8, std::fma
MicroKernelInfo micro_kernel_avx2();    // 6 x 16, AVX2 + FMA
MicroKernelInfo micro_kernel_avx512();  // 12 x 32, AVX-512F

}  // namespace mantissa::kernels::gemm_detail
