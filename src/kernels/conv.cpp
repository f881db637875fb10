#include "mantissa/kernels/conv.hpp"

#include <algorithm>
#include <limits>

#include "mantissa/kernels/parallel.hpp"

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

}  // namespace mantissa::kernels
