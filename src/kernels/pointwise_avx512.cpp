// Compiled with -mavx512f -mavx512bw; entered only where the active SIMD path is avx512.
#include "pointwise_avx512.hpp"

#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include "gelu_lanes_avx512.hpp"

namespace mantissa::kernels::detail {

void gelu_forward_avx512(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gelu_backward_avx512(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(
        dx + i, m, gelu_slope16(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, dy + i)));
  }
}

void gelu_forward_bf16_avx512(const std::uint16_t* x, std::uint16_t* y, std::int64_t n, bool unit) {
  if (unit) {
    gelu_forward_bf16_by_unit(x, y, n);
    return;
  }
  map_rounded<IntegerRounding>(y, n, GeluForward16(), x);
}

void gelu_backward_bf16_avx512(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                               std::int64_t n, bool unit) {
  if (unit) {
    gelu_backward_bf16_by_unit(x, dy, dx, n);
    return;
  }
  map_rounded<IntegerRounding>(dx, n, GeluBackward16(), x, dy);
}

void add_bf16_avx512(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                     std::int64_t n, bool unit) {
  if (unit) {
    add_bf16_by_unit(a, b, y, n);
    return;
  }
  map_rounded<IntegerRounding>(y, n, Add16(), a, b);
}

namespace {

// 16 float32 lanes from element i of x (bfloat16 bits when Bf16, else float32), masked by m
// when Masked.
template <bool Bf16, bool Masked>
__m512 lanes_at(const void* x, std::int64_t i, __mmask16 m) {
  if constexpr (Bf16) {
    const auto* p = static_cast<const std::uint16_t*>(x) + i;
    return Masked ? load_bf16_lanes(p, m) : load_bf16_16_raw(p);
  } else {
    const auto* p = static_cast<const float*>(x) + i;
    return Masked ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
  }
}

}  // namespace

template <bool A16, bool B16>
void sum_to_float32_avx512(const void* a, const void* b, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i,
                     _mm512_add_ps(lanes_at<A16, false>(a, i, 0), lanes_at<B16, false>(b, i, 0)));
  }
  if (i < n) {
    const __mmask16 m = lanes16(n - i);
    _mm512_mask_storeu_ps(
        y + i, m, _mm512_add_ps(lanes_at<A16, true>(a, i, m), lanes_at<B16, true>(b, i, m)));
  }
}

template void sum_to_float32_avx512<true, true>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<true, false>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<false, true>(const void*, const void*, float*, std::int64_t);
template void sum_to_float32_avx512<false, false>(const void*, const void*, float*, std::int64_t);

void add_bf16_rows_avx512(const std::uint16_t* g, std::int64_t rows, std::int64_t ld,
                          std::int64_t n, float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint16_t* row = g + r * ld;
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      _mm512_storeu_ps(sums + j,
                       _mm512_add_ps(_mm512_loadu_ps(sums + j), load_bf16_16_raw(row + j)));
    }
    if (j < n) {
      const __mmask16 m = lanes16(n - j);
      _mm512_mask_storeu_ps(
          sums + j, m,
          _mm512_add_ps(_mm512_maskz_loadu_ps(m, sums + j), load_bf16_lanes(row + j, m)));
    }
  }
}

}  // namespace mantissa::kernels::detail
