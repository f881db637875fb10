// Compiled with -mavx2 -mfma; called only after a CPUID check.
#include <immintrin.h>

#include "micro_kernels.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

constexpr int kMr = 6, kNr = 16;

void kernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
            bool load) {
  if (load) {
    // The next call's C block (the blocked GEMM walks the rows' blocks in turn), asked for now
    // so that its loads, which start that call, find it cached. Prefetches do not fault.
#pragma GCC unroll 6
    for (int r = kMr; r < 2 * kMr; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 15), _MM_HINT_T0);
    }
  }
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = load ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

}  // namespace

MicroKernelInfo micro_kernel_avx2() {
  return {GemmIsa::avx2, kMr, kNr, kernel};
}

}  // namespace mantissa::kernels::gemm_detail
