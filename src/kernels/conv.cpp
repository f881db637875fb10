#include "mantissa/kernels/conv.hpp"

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pool_avx512.hpp"

namespace mantissa::kernels {

void im2col(const float* x, const Conv2dGeometry& g, float* cols, std::int64_t ld) {
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  for (std::int64_t c = 0; c < g.channels; ++c) {
    for (std::int64_t i = 0; i < g.kernel_h; ++i) {
      for (std::int64_t j = 0; j < g.kernel_w; ++j) {
        float* row = cols + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t y = oy * g.stride - g.padding + i;
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t xx = ox * g.stride - g.padding + j;
            const bool inside = y >= 0 && y < g.height && xx >= 0 && xx < g.width;
            row[oy * ow + ox] = inside ? x[(c * g.height + y) * g.width + xx] : 0.0f;
          }
        }
      }
    }
  }
}

void col2im(const float* cols, const Conv2dGeometry& g, float* dx, std::int64_t ld) {
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  for (std::int64_t c = 0; c < g.channels; ++c) {
    for (std::int64_t i = 0; i < g.kernel_h; ++i) {
      for (std::int64_t j = 0; j < g.kernel_w; ++j) {
        const float* row = cols + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t y = oy * g.stride - g.padding + i;
          if (y < 0 || y >= g.height) continue;
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t xx = ox * g.stride - g.padding + j;
            if (xx < 0 || xx >= g.width) continue;
            dx[(c * g.height + y) * g.width + xx] += row[oy * ow + ox];
          }
        }
      }
    }
  }
}

void conv2d_ref(const float* x, const float* w, const float* bias, std::int64_t out_channels,
                const Conv2dGeometry& g, float* y) {
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  for (std::int64_t o = 0; o < out_channels; ++o) {
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        double acc = bias != nullptr ? bias[o] : 0.0;
        for (std::int64_t c = 0; c < g.channels; ++c) {
          for (std::int64_t i = 0; i < g.kernel_h; ++i) {
            for (std::int64_t j = 0; j < g.kernel_w; ++j) {
              const std::int64_t yy = oy * g.stride - g.padding + i;
              const std::int64_t xx = ox * g.stride - g.padding + j;
              if (yy < 0 || yy >= g.height || xx < 0 || xx >= g.width) continue;
              acc += static_cast<double>(x[(c * g.height + yy) * g.width + xx]) *
                     w[((o * g.channels + c) * g.kernel_h + i) * g.kernel_w + j];
            }
          }
        }
        y[(o * oh + oy) * ow + ox] = static_cast<float>(acc);
      }
    }
  }
}

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

// 8 outputs of a 2 x 2, stride 2 row: the two input rows' 16 values each, even and odd
// columns apart, the four candidates compared in the window's order (strictly greater wins).
void relu_max_pool_2x2_row(const float* xp, std::int64_t width, std::int64_t oy, std::int64_t ow,
                           float* yp, std::int32_t* ap) {
  const float* r0 = xp + 2 * oy * width;
  const float* r1 = r0 + width;
  const __m256i lane = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const __m256i odd_of = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  std::int64_t ox = 0;
  for (; ox + 8 <= ow && 2 * ox + 16 <= width; ox += 8) {
    const auto split = [&](const float* r, __m256& even, __m256& odd) {
      const __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(r + 2 * ox), odd_of);
      const __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(r + 2 * ox + 8), odd_of);
      even = _mm256_permute2f128_ps(lo, hi, 0x20);
      odd = _mm256_permute2f128_ps(lo, hi, 0x31);
    };
    __m256 a, b, c, d;
    split(r0, a, b);
    split(r1, c, d);
    const __m256i base =
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(2 * oy * width + 2 * ox)), lane);
    __m256 best = a;
    __m256i at = base;
    const auto take = [&](__m256 v, int offset) {
      const __m256 more = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
      best = _mm256_blendv_ps(best, v, more);
      at = _mm256_castps_si256(_mm256_blendv_ps(
          _mm256_castsi256_ps(at),
          _mm256_castsi256_ps(_mm256_add_epi32(base, _mm256_set1_epi32(offset))), more));
    };
    // a NaN first candidate: the scalar loop's best stays -inf until a number beats it
    const __m256 nan_a = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
    best = _mm256_blendv_ps(a, _mm256_set1_ps(-std::numeric_limits<float>::infinity()), nan_a);
    take(b, 1);
    take(c, static_cast<int>(width));
    take(d, static_cast<int>(width) + 1);
    const __m256 positive = _mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_storeu_ps(yp + oy * ow + ox, _mm256_and_ps(best, positive));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(ap + oy * ow + ox),
        _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(-1)),
                                             _mm256_castsi256_ps(at), positive)));
  }
  relu_max_pool_plane(xp, 0, width, 2, 2, oy, ox, ow, yp, ap);
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
  const bool two_by_two = kernel == 2 && stride == 2;
  const bool avx512 = two_by_two && numerics::active_simd_path() == numerics::SimdPath::avx512;
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
  if (kernel != 2 || stride != 2 || numerics::active_simd_path() != numerics::SimdPath::avx512) {
    relu_max_pool2d_backward_ref(dy, argmax, planes, in_size, out_size, dx);
    return;
  }
  for (std::int64_t p = 0; p < planes; ++p) {
    detail::relu_max_pool_2x2_backward_avx512(dy + p * out_size, argmax + p * out_size, height,
                                              width, dx + p * in_size);
  }
}

}  // namespace mantissa::kernels
