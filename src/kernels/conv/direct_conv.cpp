// Direct convolutions for small patches (direct_conv.hpp). The images are zero-padded into
// float32 once per call; then each tap (channel, row, column of the kernel) is one shifted
// read of a padded row, so 8 output columns take one FMA per tap. Taps go in groups of up to
// kGroup whose vectors stay in registers (a template per group size).
#include "direct_conv.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <vector>

#include "../avx2_lanes.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels::conv_detail {
namespace {

constexpr std::int64_t kLanes = 8;
constexpr int kGroup = 9;  // taps held in registers at once (a 3 x 3 kernel of one channel)
constexpr std::int64_t kImagesPerPart = 16;
constexpr std::int64_t kTileFloats = 1 << 14;  // a forward's results per block (64 KiB)

struct Geometry {
  std::int64_t channels = 0, height = 0, width = 0, padding = 0;
  std::int64_t hp = 0, wp = 0, oh = 0, ow = 0, taps = 0;
  std::int64_t image = 0;  // floats per padded image
  // Tap t's offset in a padded image from an output position's top-left corner.
  std::array<std::int64_t, kDirectMaxPatch> offset{};
};

Geometry geometry_of(const ConvKey& c) {
  Geometry g;
  g.channels = c.channels, g.height = c.height, g.width = c.width, g.padding = c.padding;
  g.hp = c.height + 2 * c.padding, g.wp = c.width + 2 * c.padding;
  g.oh = g.hp - c.kernel_h + 1, g.ow = g.wp - c.kernel_w + 1;
  g.taps = c.channels * c.kernel_h * c.kernel_w;
  g.image = c.channels * g.hp * g.wp;
  std::int64_t t = 0;
  for (std::int64_t ch = 0; ch < c.channels; ++ch) {
    for (std::int64_t i = 0; i < c.kernel_h; ++i) {
      for (std::int64_t j = 0; j < c.kernel_w; ++j) g.offset[t++] = (ch * g.hp + i) * g.wp + j;
    }
  }
  return g;
}

const void* element(const Operand& x, std::int64_t e) {
  return static_cast<const char*>(x.data) + e * numerics::traits(x.format).storage_bytes;
}

// Every image of x zero-padded, float32 [batch, channels, hp, wp], and a vector of zeros
// after the last (in the calling thread's buffer).
const float* padded_images(std::int64_t batch, const Geometry& g, const Operand& x,
                           gemm_detail::Part part) {
  thread_local ScratchBuffer buffer;
  float* out = buffer.as<float>(static_cast<std::size_t>(batch * g.image + kLanes));
  parallel_chunks(
      batch,
      [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) {
          float* img = out + n * g.image;
          std::fill(img, img + g.image, 0.0f);
          for (std::int64_t ch = 0; ch < g.channels; ++ch) {
            for (std::int64_t y = 0; y < g.height; ++y) {
              float* row = img + (ch * g.hp + y + g.padding) * g.wp + g.padding;
              numerics::decode_array(element(x, ((n * g.channels + ch) * g.height + y) * g.width),
                                     static_cast<std::size_t>(g.width), x.format, row);
              gemm_detail::apply_part(row, g.width, part);
            }
          }
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(g.image, 1)), 1);
  std::fill(out + batch * g.image, out + batch * g.image + kLanes, 0.0f);
  return out;
}

// 8 floats from p, or the first `lanes` of them (the rest 0) when the vector is partial.
inline __m256 load8(const float* p, bool full, __m256i lanes) {
  return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes);
}

// Output columns [ox0, ox0 + 8) of one output row for taps [t0, t0 + G), every output
// channel: base points at the row's padded-image position (ox0 included). Sums continue from
// `partial` after the first group and end in y (+ bias) after the last.
template <int G>
void forward_group(const float* base, const Geometry& g, std::int64_t t0, const float* wf,
                   std::int64_t out_channels, bool first, bool last, const float* bias,
                   float* partial, float* y, std::int64_t y_stride, bool full, __m256i lanes) {
  __m256 xv[G];
  for (int k = 0; k < G; ++k) xv[k] = load8(base + g.offset[t0 + k], full, lanes);
  for (std::int64_t o = 0; o < out_channels; ++o) {
    const float* wo = wf + o * g.taps + t0;
    __m256 acc = first ? _mm256_setzero_ps() : _mm256_load_ps(partial + o * kLanes);
    for (int k = 0; k < G; ++k) acc = _mm256_fmadd_ps(_mm256_set1_ps(wo[k]), xv[k], acc);
    if (!last) {
      _mm256_store_ps(partial + o * kLanes, acc);
      continue;
    }
    if (bias != nullptr) acc = _mm256_add_ps(acc, _mm256_set1_ps(bias[o]));
    float* out = y + o * y_stride;
    if (full) {
      _mm256_storeu_ps(out, acc);
    } else {
      _mm256_maskstore_ps(out, lanes, acc);
    }
  }
}

// acc[t0 .. t0 + G) += the products of one dy plane [oh, ow] with one padded image's taps,
// and *dsum += the plane's values when dsum is given; 8 partial sums (lanes) each.
template <int G>
void weights_group(const float* dy, const float* img, const Geometry& g, std::int64_t t0,
                   __m256* acc, __m256* dsum) {
  __m256 a[G];
  for (int k = 0; k < G; ++k) a[k] = acc[t0 + k];
  __m256 s = dsum != nullptr ? *dsum : _mm256_setzero_ps();
  for (std::int64_t oy = 0; oy < g.oh; ++oy) {
    const float* drow = dy + oy * g.ow;
    const float* xrow = img + oy * g.wp;
    for (std::int64_t ox = 0; ox < g.ow; ox += kLanes) {
      const bool full = ox + kLanes <= g.ow;
      const __m256i lanes = detail::first_lanes8(g.ow - ox);
      const __m256 d = load8(drow + ox, full, lanes);
      s = _mm256_add_ps(s, d);
      for (int k = 0; k < G; ++k) {
        a[k] = _mm256_fmadd_ps(d, load8(xrow + ox + g.offset[t0 + k], full, lanes), a[k]);
      }
    }
  }
  for (int k = 0; k < G; ++k) acc[t0 + k] = a[k];
  if (dsum != nullptr) *dsum = s;
}

// fn.template operator()<G>() for G = size (1..kGroup).
template <class Fn>
void with_group_size(std::int64_t size, Fn&& fn) {
  switch (size) {
    case 1:
      return fn.template operator()<1>();
    case 2:
      return fn.template operator()<2>();
    case 3:
      return fn.template operator()<3>();
    case 4:
      return fn.template operator()<4>();
    case 5:
      return fn.template operator()<5>();
    case 6:
      return fn.template operator()<6>();
    case 7:
      return fn.template operator()<7>();
    case 8:
      return fn.template operator()<8>();
    default:
      return fn.template operator()<kGroup>();
  }
}

// The 8 lanes' sum, lane 0 first.
float lane_sum(__m256 v) {
  alignas(32) float l[kLanes];
  _mm256_store_ps(l, v);
  float s = 0.0f;
  for (float x : l) s += x;
  return s;
}

}  // namespace

bool direct_conv_fits(const ConvKey& c) {
  return c.stride == 1 && c.channels * c.kernel_h * c.kernel_w <= kDirectMaxPatch;
}

void direct_conv_forward(const ConvKey& c, const Operand& x, const Operand& w, const float* bias,
                         gemm_detail::Part part, float* y, void* y_stored, Format y_format) {
  const Geometry g = geometry_of(c);
  const float* xp = padded_images(c.batch, g, x, part);
  std::vector<float> wf(static_cast<std::size_t>(c.out_channels * g.taps));
  numerics::decode_array(w.data, wf.size(), w.format, wf.data());
  gemm_detail::apply_part(wf.data(), static_cast<std::int64_t>(wf.size()), part);
  const float* b = c.bias ? bias : nullptr;
  const std::int64_t plane = g.oh * g.ow;
  // Blocks of output rows of one image, every output channel: about kTileFloats results,
  // rounded into y_stored from a per-thread tile while they are in cache.
  const std::int64_t rows = std::clamp<std::int64_t>(
      kTileFloats / std::max<std::int64_t>(c.out_channels * g.ow, 1), 1, g.oh);
  const std::int64_t blocks = (g.oh + rows - 1) / rows;
  const int stored_bytes = y_stored != nullptr ? numerics::traits(y_format).storage_bytes : 0;
  parallel_chunks(
      c.batch * blocks,
      [&](std::int64_t i0, std::int64_t i1) {
        thread_local ScratchBuffer partial_buffer, tile_buffer;
        float* partial =
            partial_buffer.as<float>(static_cast<std::size_t>(c.out_channels * kLanes));
        float* tile =
            y_stored != nullptr
                ? tile_buffer.as<float>(static_cast<std::size_t>(c.out_channels * rows * g.ow))
                : nullptr;
        for (std::int64_t item = i0; item < i1; ++item) {
          const std::int64_t n = item / blocks, oy0 = item % blocks * rows;
          const std::int64_t oy1 = std::min(g.oh, oy0 + rows), len = (oy1 - oy0) * g.ow;
          // Where output channel o's rows [oy0, oy1) go: o * stride floats on from `out`.
          float* out = tile != nullptr ? tile : y + n * c.out_channels * plane + oy0 * g.ow;
          const std::int64_t stride = tile != nullptr ? len : plane;
          for (std::int64_t oy = oy0; oy < oy1; ++oy) {
            for (std::int64_t ox = 0; ox < g.ow; ox += kLanes) {
              const bool full = ox + kLanes <= g.ow;
              const __m256i lanes = detail::first_lanes8(g.ow - ox);
              const float* base = xp + n * g.image + oy * g.wp + ox;
              float* at = out + (oy - oy0) * g.ow + ox;
              for (std::int64_t t0 = 0; t0 < g.taps; t0 += kGroup) {
                const std::int64_t size = std::min<std::int64_t>(kGroup, g.taps - t0);
                with_group_size(size, [&]<int G>() {
                  forward_group<G>(base, g, t0, wf.data(), c.out_channels, t0 == 0,
                                   t0 + size >= g.taps, b, partial, at, stride, full, lanes);
                });
              }
            }
          }
          if (tile == nullptr) continue;
          for (std::int64_t o = 0; o < c.out_channels; ++o) {
            numerics::convert_array(
                tile + o * len, Format::float32, static_cast<std::size_t>(len),
                static_cast<char*>(y_stored) +
                    ((n * c.out_channels + o) * plane + oy0 * g.ow) * stored_bytes,
                y_format);
          }
        }
      },
      std::max<std::int64_t>(
          1, kParallelMinElements / std::max<std::int64_t>(c.out_channels * rows * g.ow, 1)),
      1);
}

void direct_conv_backward_weights(const ConvKey& c, const Operand& x, const Operand& dy,
                                  gemm_detail::Part part, float* dw, float* db) {
  const Geometry g = geometry_of(c);
  const float* xp = padded_images(c.batch, g, x, part);
  const std::int64_t plane = g.oh * g.ow;
  const std::int64_t parts = (c.batch + kImagesPerPart - 1) / kImagesPerPart;
  // Per (output channel, part of the batch): the taps' sums, then dy's.
  const std::int64_t sums = g.taps + 1;
  std::vector<float> part_sums(static_cast<std::size_t>(c.out_channels * parts * sums));
  parallel_chunks(
      c.out_channels * parts,
      [&](std::int64_t i0, std::int64_t i1) {
        thread_local ScratchBuffer dy_buffer;
        float* decoded = dy_buffer.as<float>(static_cast<std::size_t>(plane));
        for (std::int64_t item = i0; item < i1; ++item) {
          const std::int64_t o = item / parts, block = item % parts;
          __m256 acc[kDirectMaxPatch];
          for (__m256& a : acc) a = _mm256_setzero_ps();
          __m256 dsum = _mm256_setzero_ps();
          const std::int64_t n1 = std::min(c.batch, (block + 1) * kImagesPerPart);
          for (std::int64_t n = block * kImagesPerPart; n < n1; ++n) {
            const std::int64_t at = (n * c.out_channels + o) * plane;
            const float* d = decoded;
            if (dy.format == Format::float32 && part == gemm_detail::Part::whole) {
              d = static_cast<const float*>(dy.data) + at;
            } else {
              numerics::decode_array(element(dy, at), static_cast<std::size_t>(plane), dy.format,
                                     decoded);
              gemm_detail::apply_part(decoded, plane, part);
            }
            for (std::int64_t t0 = 0; t0 < g.taps; t0 += kGroup) {
              with_group_size(std::min<std::int64_t>(kGroup, g.taps - t0), [&]<int G>() {
                weights_group<G>(d, xp + n * g.image, g, t0, acc, t0 == 0 ? &dsum : nullptr);
              });
            }
          }
          float* out = part_sums.data() + item * sums;
          for (std::int64_t t = 0; t < g.taps; ++t) out[t] = lane_sum(acc[t]);
          out[g.taps] = lane_sum(dsum);
        }
      },
      1, 1);
  // The parts' sums in part order.
  for (std::int64_t o = 0; o < c.out_channels; ++o) {
    for (std::int64_t t = 0; t <= g.taps; ++t) {
      float s = 0.0f;
      for (std::int64_t part = 0; part < parts; ++part)
        s += part_sums[(o * parts + part) * sums + t];
      if (t < g.taps) {
        dw[o * g.taps + t] = s;
      } else if (db != nullptr) {
        db[o] = s;
      }
    }
  }
}

}  // namespace mantissa::kernels::conv_detail
