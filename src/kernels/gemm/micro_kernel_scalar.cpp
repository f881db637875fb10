#include <cmath>

#include "micro_kernels.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

constexpr int kMr = 4, kNr = 8;

void kernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
            bool load) {
  float acc[kMr][kNr];
  for (int r = 0; r < kMr; ++r) {
    for (int j = 0; j < kNr; ++j) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    for (int r = 0; r < kMr; ++r) {
      for (int j = 0; j < kNr; ++j) acc[r][j] = std::fma(a[k * kMr + r], b[k * kNr + j], acc[r][j]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int j = 0; j < kNr; ++j) c[r * ldc + j] = acc[r][j];
  }
}

}  // namespace

MicroKernelInfo micro_kernel_scalar() {
  return {GemmIsa::scalar, kMr, kNr, kernel};
}

}  // namespace mantissa::kernels::gemm_detail
