#include "mantissa/kernels/grad_reductions.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "mantissa/numerics/convert.hpp"

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

// Patterns p with (p & mask) == mask are inf or NaN: the exponent field all ones (IEEE-style
// formats), or every magnitude bit set (the OCP fn formats' only NaN).
template <class Bits>
bool block_has_pattern(const Bits* p, std::int64_t n, Bits mask) {
  Bits hit = 0;
  for (std::int64_t i = 0; i < n; ++i) hit |= static_cast<Bits>((p[i] & mask) == mask);
  return hit != 0;
}

// On all threads, in blocks; a thread stops at its first block with a hit, and the others
// at their next block.
template <class Bits>
bool any_pattern(const void* data, std::int64_t n, Bits mask) {
  constexpr std::int64_t kScanBlock = 1 << 13;
  const Bits* p = static_cast<const Bits*>(data);
  const std::int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  std::atomic<bool> found{false};
#pragma omp parallel for schedule(static) if (blocks >= 8)
  for (std::int64_t b = 0; b < blocks; ++b) {
    if (found.load(std::memory_order_relaxed)) continue;
    const std::int64_t begin = b * kScanBlock;
    if (block_has_pattern(p + begin, std::min(kScanBlock, n - begin), mask)) {
      found.store(true, std::memory_order_relaxed);
    }
  }
  return found.load();
}

}  // namespace

bool any_nonfinite(const void* data, numerics::Format format, std::int64_t n) {
  const numerics::Layout l = numerics::layout(format);
  if (!l.has_nan()) return false;
  const std::uint32_t mask = l.specials == numerics::Specials::ieee
                                 ? l.exponent_mask() << l.mantissa_bits
                                 : l.magnitude_mask();
  switch (numerics::traits(format).storage_bytes) {
    case 4:
      return any_pattern<std::uint32_t>(data, n, mask);
    case 2:
      return any_pattern<std::uint16_t>(data, n, static_cast<std::uint16_t>(mask));
    default:
      return any_pattern<std::uint8_t>(data, n, static_cast<std::uint8_t>(mask));
  }
}

bool any_nonfinite_ref(const void* data, numerics::Format format, std::int64_t n) {
  const std::int64_t bytes = numerics::traits(format).storage_bytes;
  for (std::int64_t i = 0; i < n; ++i) {
    float v = 0;
    numerics::decode_array_ref(static_cast<const char*>(data) + i * bytes, 1, format, &v);
    if (!std::isfinite(v)) return true;
  }
  return false;
}

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
