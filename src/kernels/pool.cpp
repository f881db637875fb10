// Max pooling (conv.hpp): the plain kernel, and relu_max_pool2d with its 2 x 2, stride 2
// windows on the vector units (AVX2 here, AVX-512 in pool_avx512.cpp; the scalar path and
// other windows by the window loop, the twin).
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "avx2_lanes.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pool_avx512.hpp"

namespace mantissa::kernels {

void max_pool2d_forward(const float* x, std::int64_t planes, std::int64_t height,
                        std::int64_t width, std::int64_t kernel, std::int64_t stride, float* y,
                        std::int32_t* argmax) {
  const std::int64_t oh = (height - kernel) / stride + 1, ow = (width - kernel) / stride + 1;
#pragma omp parallel for schedule(static) if (planes * height * width >= kParallelMinElements)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * height * width;
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        std::int32_t at = 0;
        for (std::int64_t i = 0; i < kernel; ++i) {
          for (std::int64_t j = 0; j < kernel; ++j) {
            const std::int64_t idx = (oy * stride + i) * width + ox * stride + j;
            if (xp[idx] > best) {
              best = xp[idx];
              at = static_cast<std::int32_t>(idx);
            }
          }
        }
        y[(p * oh + oy) * ow + ox] = best;
        argmax[(p * oh + oy) * ow + ox] = at;
      }
    }
  }
}

void max_pool2d_backward(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                         std::int64_t in_size, std::int64_t out_size, float* dx) {
#pragma omp parallel for schedule(static) if (planes * in_size >= kParallelMinElements)
  for (std::int64_t p = 0; p < planes; ++p) {
    std::fill(dx + p * in_size, dx + (p + 1) * in_size, 0.0f);
    for (std::int64_t i = 0; i < out_size; ++i) {
      dx[p * in_size + argmax[p * out_size + i]] += dy[p * out_size + i];
    }
  }
}

namespace {

// One plane's window maxima above zero, any kernel and stride, in max_pool2d_forward's order.
void relu_max_pool_plane(const float* xp, std::int64_t height, std::int64_t width,
                         std::int64_t kernel, std::int64_t stride, std::int64_t oy0,
                         std::int64_t ox0, std::int64_t ow_end, float* yp, std::int32_t* ap) {
  const std::int64_t ow = (width - kernel) / stride + 1;
  (void)height;
  for (std::int64_t ox = ox0; ox < ow_end; ++ox) {
    float best = -std::numeric_limits<float>::infinity();
    std::int32_t at = 0;
    for (std::int64_t i = 0; i < kernel; ++i) {
      for (std::int64_t j = 0; j < kernel; ++j) {
        const std::int64_t idx = (oy0 * stride + i) * width + ox * stride + j;
        if (xp[idx] > best) {
          best = xp[idx];
          at = static_cast<std::int32_t>(idx);
        }
      }
    }
    yp[oy0 * ow + ox] = best > 0.0f ? best : 0.0f;
    ap[oy0 * ow + ox] = best > 0.0f ? at : -1;
  }
}

// The input index of window ox0 + lane's first candidate in row pair oy.
__m256i window_base8(std::int64_t width, std::int64_t oy, std::int64_t ox0) {
  return _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(2 * oy * width + 2 * ox0)),
                          _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
}

// Output row oy of a 2 x 2, stride 2 plane, 8 windows at a time: the two input rows' 16
// values each, even and odd columns apart, the four candidates compared in the window's order
// (strictly greater wins); masked loads and stores for a row's last windows.
void relu_max_pool_2x2_row(const float* xp, std::int64_t width, std::int64_t oy, std::int64_t ow,
                           float* yp, std::int32_t* ap) {
  const float* r0 = xp + 2 * oy * width;
  const float* r1 = r0 + width;
  const __m256i odd_of = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t ox = 0; ox < ow; ox += 8) {
    const std::int64_t n = std::min<std::int64_t>(8, ow - ox);
    const auto split = [&](const float* r, __m256& even, __m256& odd) {
      const __m256 lo = _mm256_permutevar8x32_ps(
          _mm256_maskload_ps(r + 2 * ox, detail::first_lanes8(2 * n)), odd_of);
      const __m256 hi = _mm256_permutevar8x32_ps(
          _mm256_maskload_ps(r + 2 * ox + 8, detail::first_lanes8(2 * n - 8)), odd_of);
      even = _mm256_permute2f128_ps(lo, hi, 0x20);
      odd = _mm256_permute2f128_ps(lo, hi, 0x31);
    };
    __m256 a, b, c, d;
    split(r0, a, b);
    split(r1, c, d);
    const __m256i base = window_base8(width, oy, ox);
    // The scalar loop's order: best starts at -inf, a candidate wins when strictly greater
    // (a NaN never does).
    __m256 best = _mm256_blendv_ps(minus_inf, a, _mm256_cmp_ps(a, minus_inf, _CMP_GT_OQ));
    __m256i at = base;
    const auto take = [&](__m256 v, int offset) {
      const __m256 more = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
      best = _mm256_blendv_ps(best, v, more);
      at = _mm256_castps_si256(_mm256_blendv_ps(
          _mm256_castsi256_ps(at),
          _mm256_castsi256_ps(_mm256_add_epi32(base, _mm256_set1_epi32(offset))), more));
    };
    take(b, 1);
    take(c, static_cast<int>(width));
    take(d, static_cast<int>(width) + 1);
    const __m256 positive = _mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256i lanes = detail::first_lanes8(n);
    _mm256_maskstore_ps(yp + oy * ow + ox, lanes, _mm256_and_ps(best, positive));
    _mm256_maskstore_epi32(
        ap + oy * ow + ox, lanes,
        _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(-1)),
                                             _mm256_castsi256_ps(at), positive)));
  }
}

// One plane's input gradient of 2 x 2, stride 2 windows, 8 windows at a time: each input gets
// 0 + dy of the window whose argmax it is (as the scatter's += onto zeros: a -0 gradient
// arrives as +0), +0 elsewhere; an odd height's last row or width's last column none.
void relu_max_pool_2x2_backward(const float* dy, const std::int32_t* argmax, std::int64_t height,
                                std::int64_t width, float* dx) {
  const std::int64_t oh = height / 2, ow = width / 2;
  const __m256 zero = _mm256_setzero_ps();
  for (std::int64_t oy = 0; oy < oh; ++oy) {
    float* d0 = dx + 2 * oy * width;
    float* d1 = d0 + width;
    for (std::int64_t ox = 0; ox < ow; ox += 8) {
      const std::int64_t n = std::min<std::int64_t>(8, ow - ox);
      const __m256i lanes = detail::first_lanes8(n);
      const __m256 g = _mm256_maskload_ps(dy + oy * ow + ox, lanes);
      const __m256i at = _mm256_maskload_epi32(argmax + oy * ow + ox, lanes);
      const __m256i base = window_base8(width, oy, ox);
      const auto to = [&](int offset) {
        const __m256i here =
            _mm256_cmpeq_epi32(at, _mm256_add_epi32(base, _mm256_set1_epi32(offset)));
        return _mm256_add_ps(zero, _mm256_and_ps(g, _mm256_castsi256_ps(here)));
      };
      // even and odd columns back into 2n values
      const auto merge = [&](float* p, __m256 even, __m256 odd) {
        const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
        _mm256_maskstore_ps(p, detail::first_lanes8(2 * n), _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_maskstore_ps(p + 8, detail::first_lanes8(2 * n - 8),
                            _mm256_permute2f128_ps(lo, hi, 0x31));
      };
      merge(d0 + 2 * ox, to(0), to(1));
      merge(d1 + 2 * ox, to(static_cast<int>(width)), to(static_cast<int>(width) + 1));
    }
    if (width % 2 != 0) d0[width - 1] = d1[width - 1] = 0.0f;
  }
  if (height % 2 != 0) std::fill(dx + (height - 1) * width, dx + height * width, 0.0f);
}

}  // namespace

void relu_max_pool2d_forward_ref(const float* x, std::int64_t planes, std::int64_t height,
                                 std::int64_t width, std::int64_t kernel, std::int64_t stride,
                                 float* y, std::int32_t* argmax) {
  const std::int64_t oh = (height - kernel) / stride + 1, ow = (width - kernel) / stride + 1;
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      relu_max_pool_plane(x + p * height * width, height, width, kernel, stride, oy, 0, ow,
                          y + p * oh * ow, argmax + p * oh * ow);
    }
  }
}

void relu_max_pool2d_forward(const float* x, std::int64_t planes, std::int64_t height,
                             std::int64_t width, std::int64_t kernel, std::int64_t stride, float* y,
                             std::int32_t* argmax) {
  const std::int64_t oh = (height - kernel) / stride + 1, ow = (width - kernel) / stride + 1;
  const numerics::SimdPath path = numerics::active_simd_path();
  const bool two_by_two = kernel == 2 && stride == 2 && path != numerics::SimdPath::scalar;
  const bool avx512 = two_by_two && path == numerics::SimdPath::avx512;
#pragma omp parallel for schedule(static) if (planes * height * width >= kParallelMinElements)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * height * width;
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      if (avx512) {
        detail::relu_max_pool_2x2_row_avx512(xp, width, oy, y + p * oh * ow, argmax + p * oh * ow);
      } else if (two_by_two) {
        relu_max_pool_2x2_row(xp, width, oy, ow, y + p * oh * ow, argmax + p * oh * ow);
      } else {
        relu_max_pool_plane(xp, height, width, kernel, stride, oy, 0, ow, y + p * oh * ow,
                            argmax + p * oh * ow);
      }
    }
  }
}

void relu_max_pool2d_backward_ref(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                                  std::int64_t in_size, std::int64_t out_size, float* dx) {
  for (std::int64_t p = 0; p < planes; ++p) {
    std::fill(dx + p * in_size, dx + (p + 1) * in_size, 0.0f);
    for (std::int64_t i = 0; i < out_size; ++i) {
      const std::int32_t at = argmax[p * out_size + i];
      if (at >= 0) dx[p * in_size + at] += dy[p * out_size + i];
    }
  }
}

void relu_max_pool2d_backward(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                              std::int64_t height, std::int64_t width, std::int64_t kernel,
                              std::int64_t stride, float* dx) {
  const std::int64_t in_size = height * width;
  const std::int64_t out_size = ((height - kernel) / stride + 1) * ((width - kernel) / stride + 1);
  const numerics::SimdPath path = numerics::active_simd_path();
  if (kernel != 2 || stride != 2 || path == numerics::SimdPath::scalar) {
    relu_max_pool2d_backward_ref(dy, argmax, planes, in_size, out_size, dx);
    return;
  }
  for (std::int64_t p = 0; p < planes; ++p) {
    if (path == numerics::SimdPath::avx512) {
      detail::relu_max_pool_2x2_backward_avx512(dy + p * out_size, argmax + p * out_size, height,
                                                width, dx + p * in_size);
    } else {
      relu_max_pool_2x2_backward(dy + p * out_size, argmax + p * out_size, height, width,
                                 dx + p * in_size);
    }
  }
}

namespace {

// Whether the bfloat16 kernels take these windows on this CPU path.
bool bf16_windows(std::int64_t kernel, std::int64_t stride) {
  return kernel == 2 && stride == 2 && numerics::active_simd_path() == numerics::SimdPath::avx512;
}

}  // namespace

bool relu_max_pool2d_forward_bf16(const std::uint16_t* x, std::int64_t planes, std::int64_t height,
                                  std::int64_t width, std::int64_t kernel, std::int64_t stride,
                                  std::uint16_t* y, std::int32_t* argmax) {
  if (!bf16_windows(kernel, stride) || height < 2 || width < 2) return false;
  const std::int64_t oh = height / 2, ow = width / 2;
#pragma omp parallel for schedule(static) if (planes * height * width >= kParallelMinElements)
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      detail::relu_max_pool_2x2_row_bf16_avx512(x + p * height * width, width, oy, y + p * oh * ow,
                                                argmax + p * oh * ow);
    }
  }
  return true;
}

bool relu_max_pool2d_backward_bf16(const std::uint16_t* dy, const std::int32_t* argmax,
                                   std::int64_t planes, std::int64_t height, std::int64_t width,
                                   std::int64_t kernel, std::int64_t stride, std::uint16_t* dx) {
  if (!bf16_windows(kernel, stride) || height < 2 || width < 2) return false;
  const std::int64_t in_size = height * width, out_size = (height / 2) * (width / 2);
#pragma omp parallel for schedule(static) if (planes * in_size >= kParallelMinElements)
  for (std::int64_t p = 0; p < planes; ++p) {
    detail::relu_max_pool_2x2_backward_bf16_avx512(dy + p * out_size, argmax + p * out_size, height,
                                                   width, dx + p * in_size);
  }
  return true;
}

}  // namespace mantissa::kernels
