// Compiled with -mavx512f -mavx512bf16; called only after a CPUID check
// (cpu_features().avx512_bf16).
#include <immintrin.h>

#include "micro_kernels.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

constexpr int kMr = 12, kNr = 32;

// One vdpbf16ps per 16 columns and row per depth pair: c += a[2p+1] b[2p+1], then
// c += a[2p] b[2p], each rounded to float32 (subnormal inputs and results read as zero).
void kernel(std::int64_t pairs, const std::uint32_t* a, const std::uint32_t* b, float* c,
            std::int64_t ldc, bool load) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

}  // namespace

MicroKernelInfo micro_kernel_avx512_bf16() {
  MicroKernelInfo info{GemmIsa::avx512, kMr, kNr, nullptr};
  info.pair_fn = kernel;
  return info;
}

}  // namespace mantissa::kernels::gemm_detail
