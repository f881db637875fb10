#include "mantissa/kernels/conv.hpp"

#include <algorithm>

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

}  // namespace mantissa::kernels
