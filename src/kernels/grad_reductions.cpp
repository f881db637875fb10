#include "mantissa/kernels/grad_reductions.hpp"

#include <algorithm>
#include <vector>

namespace mantissa::kernels {
namespace {

constexpr std::int64_t kBlock = 1 << 14;

// Eight double accumulators (lane l takes elements l, l + 8, ...): vectorizes, and the order
// of additions is fixed by the block alone.
template <bool kScale>
double block_sum(float* x, std::int64_t n, float scale) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) {
      float v = x[i + l];
      if constexpr (kScale) {
        v *= scale;
        x[i + l] = v;
      }
      acc[l] += static_cast<double>(v) * v;
    }
  }
  for (; i < n; ++i) {
    float v = x[i];
    if constexpr (kScale) {
      v *= scale;
      x[i] = v;
    }
    acc[0] += static_cast<double>(v) * v;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <bool kScale>
double blocked(float* x, std::int64_t n, float scale) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) return block_sum<kScale>(x, n, scale);
  // The caller's buffer (grows once: no allocation at steady state); the worker threads
  // write through the pointer, not through their own thread_local copies.
  thread_local std::vector<double> buffer;
  buffer.assign(static_cast<std::size_t>(blocks), 0.0);
  double* partial = buffer.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t begin = b * kBlock;
    partial[b] = block_sum<kScale>(x + begin, std::min(kBlock, n - begin), scale);
  }
  double total = 0;
  for (std::int64_t b = 0; b < blocks; ++b) total += partial[b];
  return total;
}

}  // namespace

double scale_and_sum_squares(float* x, std::int64_t n, float scale) {
  return scale == 1.0f ? blocked<false>(x, n, scale) : blocked<true>(x, n, scale);
}

double sum_squares(const float* x, std::int64_t n) {
  return blocked<false>(const_cast<float*>(x), n, 1.0f);  // read only without scaling
}

double scale_and_sum_squares_ref(float* x, std::int64_t n, float scale) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] *= scale;
    sum += static_cast<double>(x[i]) * x[i];
  }
  return sum;
}

}  // namespace mantissa::kernels
