// Direct convolutions for small patches (direct_conv.hpp). The images are zero-padded into
// float32 once per call; then each tap (channel, row, column of the kernel) is one shifted
// read of a padded row, so a vector of output columns takes one FMA per tap. Taps go in
// groups of up to kGroup whose vectors stay in registers (direct_conv_parts.hpp); this file
// runs them 8 lanes wide (AVX2), direct_conv_avx512.cpp 16 where the active SIMD path is
// avx512.
#include "direct_conv.hpp"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "../avx2_lanes.hpp"
#include "direct_conv_parts.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace mantissa::kernels::conv_detail {

bool direct_conv_fits(const ConvKey& c) {
  return c.stride == 1 && c.channels * c.kernel_h * c.kernel_w <= kDirectMaxPatch;
}

namespace {

struct Avx2Lanes {
  static constexpr std::int64_t kWidth = 8;
  using Vec = __m256;
  using Mask = __m256i;
  static Mask mask(std::int64_t n) { return detail::first_lanes8(n); }
  static Vec load(const float* p, bool full, Mask m) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
  }
  static void store(float* p, Vec v, bool full, Mask m) {
    if (full) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, m, v);
    }
  }
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static float sum(Vec v) {
    alignas(32) float l[kWidth];
    _mm256_store_ps(l, v);
    float s = 0.0f;
    for (float x : l) s += x;
    return s;
  }
};

bool avx512() {
  return numerics::active_simd_path() == numerics::SimdPath::avx512;
}

Geometry geometry_of(const ConvKey& c) {
  if (!direct_conv_fits(c)) {
    throw Error("direct convolution: stride " + std::to_string(c.stride) + " and " +
                std::to_string(c.channels * c.kernel_h * c.kernel_w) +
                " values a patch (it takes stride 1 and at most " +
                std::to_string(kDirectMaxPatch) + ")");
  }
  Geometry g;
  g.out_channels = c.out_channels;
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

// Every image of x zero-padded, float32 [batch, channels, hp, wp], and kSlack zeros after the
// last (in the calling thread's buffer).
const float* padded_images(std::int64_t batch, const Geometry& g, const Operand& x,
                           gemm_detail::Part part) {
  thread_local ScratchBuffer buffer;
  float* out = buffer.as<float>(static_cast<std::size_t>(batch * g.image + kSlack));
  const int bytes = numerics::traits(x.format).storage_bytes;
  parallel_chunks(
      batch,
      [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) {
          float* img = out + n * g.image;
          std::fill(img, img + g.image, 0.0f);
          for (std::int64_t ch = 0; ch < g.channels; ++ch) {
            for (std::int64_t y = 0; y < g.height; ++y) {
              float* row = img + (ch * g.hp + y + g.padding) * g.wp + g.padding;
              const std::int64_t at = ((n * g.channels + ch) * g.height + y) * g.width;
              numerics::decode_array(static_cast<const char*>(x.data) + at * bytes,
                                     static_cast<std::size_t>(g.width), x.format, row);
              gemm_detail::apply_part(row, g.width, part);
            }
          }
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(g.image, 1)), 1);
  std::fill(out + batch * g.image, out + batch * g.image + kSlack, 0.0f);
  return out;
}

}  // namespace

void direct_conv_forward(const ConvKey& c, const Operand& x, const Operand& w, const float* bias,
                         gemm_detail::Part part, float* y, void* y_stored, Format y_format) {
  ForwardJob job;
  job.g = geometry_of(c);
  const Geometry& g = job.g;
  job.xp = padded_images(c.batch, g, x, part);
  std::vector<float> wf(static_cast<std::size_t>(c.out_channels * g.taps));
  numerics::decode_array(w.data, wf.size(), w.format, wf.data());
  gemm_detail::apply_part(wf.data(), static_cast<std::int64_t>(wf.size()), part);
  job.wf = wf.data();
  job.bias = c.bias ? bias : nullptr;
  job.y = y;
  job.y_stored = y_stored;
  job.y_format = y_format;
  // Blocks of output rows of one image, every output channel: about kTileFloats results,
  // rounded into y_stored from a per-thread tile while they are in cache.
  job.rows = std::clamp<std::int64_t>(
      kTileFloats / std::max<std::int64_t>(c.out_channels * g.ow, 1), 1, g.oh);
  job.blocks = (g.oh + job.rows - 1) / job.rows;
  const bool wide = avx512();
  parallel_chunks(
      c.batch * job.blocks,
      [&](std::int64_t i0, std::int64_t i1) {
        if (wide) {
          forward_items_avx512(job, i0, i1);
        } else {
          forward_items<Avx2Lanes>(job, i0, i1);
        }
      },
      std::max<std::int64_t>(
          1, kParallelMinElements / std::max<std::int64_t>(c.out_channels * job.rows * g.ow, 1)),
      1);
}

void direct_conv_backward_weights(const ConvKey& c, const Operand& x, const Operand& dy,
                                  gemm_detail::Part part, float* dw, float* db) {
  WeightsJob job;
  job.g = geometry_of(c);
  const Geometry& g = job.g;
  job.batch = c.batch;
  job.xp = padded_images(c.batch, g, x, part);
  job.dy = dy;
  job.part = part;
  job.parts = (c.batch + kImagesPerPart - 1) / kImagesPerPart;
  const bool wide = avx512();
  job.per_item = wide ? kAvx512ChannelsPerItem : 1;
  // Per (output channel, block of images): the taps' sums, then dy's.
  const std::int64_t sums = g.taps + 1;
  std::vector<float> part_sums(static_cast<std::size_t>(c.out_channels * job.parts * sums));
  job.sums = part_sums.data();
  const std::int64_t groups = (c.out_channels + job.per_item - 1) / job.per_item;
  parallel_chunks(
      groups * job.parts,
      [&](std::int64_t i0, std::int64_t i1) {
        if (wide) {
          weights_items_avx512(job, i0, i1);
        } else {
          weights_items<Avx2Lanes, 1>(job, i0, i1);
        }
      },
      1, 1);
  // The blocks' sums in block order.
  for (std::int64_t o = 0; o < c.out_channels; ++o) {
    for (std::int64_t t = 0; t <= g.taps; ++t) {
      float s = 0.0f;
      for (std::int64_t block = 0; block < job.parts; ++block) {
        s += part_sums[(o * job.parts + block) * sums + t];
      }
      if (t < g.taps) {
        dw[o * g.taps + t] = s;
      } else if (db != nullptr) {
        db[o] = s;
      }
    }
  }
}

}  // namespace mantissa::kernels::conv_detail
