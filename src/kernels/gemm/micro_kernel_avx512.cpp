// Compiled with -mavx512f; called only after a CPUID check (cpu_features().avx512f).
#include <immintrin.h>

#include "micro_kernels.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

constexpr int kMr = 12, kNr = 32;

void kernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
            bool load) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
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

MicroKernelInfo micro_kernel_avx512() {
  return {GemmIsa::avx512, kMr, kNr, kernel};
}

}  // namespace mantissa::kernels::gemm_detail
