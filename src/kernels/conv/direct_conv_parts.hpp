#pragma once
// Internal to the direct convolutions (direct_conv.cpp, direct_conv_avx512.cpp): the geometry
// and work of a call, and the kernels' bodies as templates over a vector type's traits V
// (AVX2's 8 lanes, AVX-512's 16), each file instantiating them with its own traits (compiled
// with its own instruction set; the traits are file-local types, so the instantiations never
// meet).
//
// V provides: kWidth; Vec; Mask; mask(n) (the first n lanes); load(p, full, mask) (a partial
// vector's other lanes 0); store(p, v, full, mask); zero(); set1(x); fmadd(a, b, c) (a b + c);
// add(a, b); sum(v) (the lanes added in order, lane 0 first).
#include <algorithm>
#include <array>
#include <cstdint>

#include "../gemm/passes.hpp"
#include "direct_conv.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels::conv_detail {

inline constexpr int kGroup = 9;  // taps held in registers at once (a 3 x 3 kernel, 1 channel)
inline constexpr std::int64_t kImagesPerPart = 16;
inline constexpr std::int64_t kTileFloats = 1 << 14;  // a forward's results per block (64 KiB)
inline constexpr std::int64_t kSlack = 16;            // zero floats after the last padded image

struct Geometry {
  std::int64_t out_channels = 0, channels = 0, height = 0, width = 0, padding = 0;
  std::int64_t hp = 0, wp = 0, oh = 0, ow = 0, taps = 0;
  std::int64_t image = 0;  // floats per padded image
  // Tap t's offset in a padded image from an output position's top-left corner.
  std::array<std::int64_t, kDirectMaxPatch> offset{};
};

// The forward's work: items of (image, block of `rows` output rows), `blocks` per image.
struct ForwardJob {
  Geometry g;
  const float* xp = nullptr;  // the padded images
  const float* wf = nullptr;  // the weights, float32 [out_channels, taps]
  const float* bias = nullptr;
  float* y = nullptr;
  void* y_stored = nullptr;  // with y_format: where the rounded results go instead of y
  Format y_format = Format::float32;
  std::int64_t rows = 1, blocks = 1;
};

// The weight gradient's work: items of (group of `per_item` output channels, block of
// kImagesPerPart images); each writes its channels' tap sums and dy sum (taps + 1 floats per
// channel) to sums + (channel * parts + block) * (taps + 1).
struct WeightsJob {
  Geometry g;
  std::int64_t batch = 0;
  const float* xp = nullptr;
  Operand dy;
  gemm_detail::Part part = gemm_detail::Part::whole;
  std::int64_t parts = 1, per_item = 1;
  float* sums = nullptr;
};

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

// Output columns [ox, ox + kWidth) of one output row for taps [t0, t0 + G), every output
// channel: base points at the row's padded-image position. Sums continue from `partial` after
// the first group and end in y (+ bias) after the last, channel o at y + o * stride.
template <class V, int G>
void forward_group(const float* base, const Geometry& g, std::int64_t t0, const float* wf,
                   bool first, bool last, const float* bias, float* partial, float* y,
                   std::int64_t stride, bool full, typename V::Mask lanes) {
  typename V::Vec xv[G];
  for (int k = 0; k < G; ++k) xv[k] = V::load(base + g.offset[t0 + k], full, lanes);
  for (std::int64_t o = 0; o < g.out_channels; ++o) {
    const float* wo = wf + o * g.taps + t0;
    typename V::Vec acc = first ? V::zero() : V::load(partial + o * V::kWidth, true, lanes);
    for (int k = 0; k < G; ++k) acc = V::fmadd(V::set1(wo[k]), xv[k], acc);
    if (!last) {
      V::store(partial + o * V::kWidth, acc, true, lanes);
      continue;
    }
    if (bias != nullptr) acc = V::add(acc, V::set1(bias[o]));
    V::store(y + o * stride, acc, full, lanes);
  }
}

template <class V>
void forward_items(const ForwardJob& job, std::int64_t i0, std::int64_t i1) {
  const Geometry& g = job.g;
  const std::int64_t plane = g.oh * g.ow;
  thread_local ScratchBuffer partial_buffer, tile_buffer;
  float* partial = partial_buffer.as<float>(static_cast<std::size_t>(g.out_channels * V::kWidth));
  float* tile =
      job.y_stored != nullptr
          ? tile_buffer.as<float>(static_cast<std::size_t>(g.out_channels * job.rows * g.ow))
          : nullptr;
  const int stored_bytes =
      job.y_stored != nullptr ? numerics::traits(job.y_format).storage_bytes : 0;
  for (std::int64_t item = i0; item < i1; ++item) {
    const std::int64_t n = item / job.blocks, oy0 = item % job.blocks * job.rows;
    const std::int64_t oy1 = std::min(g.oh, oy0 + job.rows), len = (oy1 - oy0) * g.ow;
    // Where output channel o's rows [oy0, oy1) go: o * stride floats on from `out`.
    float* out = tile != nullptr ? tile : job.y + n * g.out_channels * plane + oy0 * g.ow;
    const std::int64_t stride = tile != nullptr ? len : plane;
    for (std::int64_t oy = oy0; oy < oy1; ++oy) {
      for (std::int64_t ox = 0; ox < g.ow; ox += V::kWidth) {
        const bool full = ox + V::kWidth <= g.ow;
        const typename V::Mask lanes = V::mask(g.ow - ox);
        const float* base = job.xp + n * g.image + oy * g.wp + ox;
        float* at = out + (oy - oy0) * g.ow + ox;
        for (std::int64_t t0 = 0; t0 < g.taps; t0 += kGroup) {
          const std::int64_t size = std::min<std::int64_t>(kGroup, g.taps - t0);
          with_group_size(size, [&]<int G>() {
            forward_group<V, G>(base, g, t0, job.wf, t0 == 0, t0 + size >= g.taps, job.bias,
                                partial, at, stride, full, lanes);
          });
        }
      }
    }
    if (tile == nullptr) continue;
    for (std::int64_t o = 0; o < g.out_channels; ++o) {
      numerics::convert_array(tile + o * len, Format::float32, static_cast<std::size_t>(len),
                              static_cast<char*>(job.y_stored) +
                                  ((n * g.out_channels + o) * plane + oy0 * g.ow) * stored_bytes,
                              job.y_format);
    }
  }
}

// acc[c][t0 .. t0 + G) += the products of C dy planes [oh, ow] (one per output channel) with
// one padded image's taps, and dsum[c] += each plane's values when `with_sum`; kWidth partial
// sums (lanes) each. The image's reads serve the C channels.
template <class V, int G, int C>
void weights_group(const float* const* dy, const float* img, const Geometry& g, std::int64_t t0,
                   typename V::Vec (*acc)[kDirectMaxPatch], typename V::Vec* dsum, bool with_sum) {
  typename V::Vec a[C][G], s[C];
  for (int c = 0; c < C; ++c) {
    for (int k = 0; k < G; ++k) a[c][k] = acc[c][t0 + k];
    s[c] = dsum[c];
  }
  for (std::int64_t oy = 0; oy < g.oh; ++oy) {
    const float* xrow = img + oy * g.wp;
    for (std::int64_t ox = 0; ox < g.ow; ox += V::kWidth) {
      const bool full = ox + V::kWidth <= g.ow;
      const typename V::Mask lanes = V::mask(g.ow - ox);
      typename V::Vec d[C];
      for (int c = 0; c < C; ++c) {
        d[c] = V::load(dy[c] + oy * g.ow + ox, full, lanes);
        if (with_sum) s[c] = V::add(s[c], d[c]);
      }
      for (int k = 0; k < G; ++k) {
        const typename V::Vec xv = V::load(xrow + ox + g.offset[t0 + k], full, lanes);
        for (int c = 0; c < C; ++c) a[c][k] = V::fmadd(d[c], xv, a[c][k]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    for (int k = 0; k < G; ++k) acc[c][t0 + k] = a[c][k];
    dsum[c] = s[c];
  }
}

// Output channels [o0, o0 + C) over block `block` of the images: their tap sums and dy sums
// into job.sums. `decoded`: room for C dy planes as float32.
template <class V, int C>
void weights_channels(const WeightsJob& job, std::int64_t o0, std::int64_t block, float* decoded) {
  const Geometry& g = job.g;
  const std::int64_t plane = g.oh * g.ow;
  const int dy_bytes = numerics::traits(job.dy.format).storage_bytes;
  typename V::Vec acc[C][kDirectMaxPatch], dsum[C];
  for (int c = 0; c < C; ++c) {
    for (auto& v : acc[c]) v = V::zero();
    dsum[c] = V::zero();
  }
  const std::int64_t n1 = std::min(job.batch, (block + 1) * kImagesPerPart);
  for (std::int64_t n = block * kImagesPerPart; n < n1; ++n) {
    const float* d[C];
    for (int c = 0; c < C; ++c) {
      const std::int64_t at = (n * g.out_channels + o0 + c) * plane;
      if (job.dy.format == Format::float32 && job.part == gemm_detail::Part::whole) {
        d[c] = static_cast<const float*>(job.dy.data) + at;
        continue;
      }
      float* into = decoded + c * plane;
      numerics::decode_array(static_cast<const char*>(job.dy.data) + at * dy_bytes,
                             static_cast<std::size_t>(plane), job.dy.format, into);
      gemm_detail::apply_part(into, plane, job.part);
      d[c] = into;
    }
    for (std::int64_t t0 = 0; t0 < g.taps; t0 += kGroup) {
      with_group_size(std::min<std::int64_t>(kGroup, g.taps - t0), [&]<int G>() {
        weights_group<V, G, C>(d, job.xp + n * g.image, g, t0, acc, dsum, t0 == 0);
      });
    }
  }
  for (int c = 0; c < C; ++c) {
    float* out = job.sums + ((o0 + c) * job.parts + block) * (g.taps + 1);
    for (std::int64_t t = 0; t < g.taps; ++t) out[t] = V::sum(acc[c][t]);
    out[g.taps] = V::sum(dsum[c]);
  }
}

// Items [i0, i1) of a WeightsJob, C = job.per_item channels an item (where C does not divide
// the channel count, the last item's channels one at a time: a channel's sums are the same
// either way).
template <class V, int C>
void weights_items(const WeightsJob& job, std::int64_t i0, std::int64_t i1) {
  thread_local ScratchBuffer dy_buffer;
  float* decoded = dy_buffer.as<float>(static_cast<std::size_t>(C * job.g.oh * job.g.ow));
  for (std::int64_t item = i0; item < i1; ++item) {
    const std::int64_t o0 = item / job.parts * C, block = item % job.parts;
    if (o0 + C <= job.g.out_channels) {
      weights_channels<V, C>(job, o0, block, decoded);
      continue;
    }
    for (std::int64_t o = o0; o < job.g.out_channels; ++o) {
      weights_channels<V, 1>(job, o, block, decoded);
    }
  }
}

}  // namespace mantissa::kernels::conv_detail

// The AVX-512 instantiations (direct_conv_avx512.cpp, 16 lanes; the weight gradient two
// channels an item).
namespace mantissa::kernels::conv_detail {
void forward_items_avx512(const ForwardJob& job, std::int64_t i0, std::int64_t i1);
void weights_items_avx512(const WeightsJob& job, std::int64_t i0, std::int64_t i1);
inline constexpr std::int64_t kAvx512ChannelsPerItem = 2;
}  // namespace mantissa::kernels::conv_detail
