// A convolution's products on their routes (conv_route.hpp): the sources made into what each
// route reads, the reference route (im2col + mantissa's GEMM), and the choice by measurement.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "../gemm/passes.hpp"
#include "direct_conv.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/conv_route.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"
#include "onednn_conv.hpp"

namespace mantissa::kernels {
namespace {

using conv_detail::SourceType;
using gemm_detail::Part;

Conv2dGeometry geometry(const ConvKey& c) {
  return {c.channels, c.height, c.width, c.kernel_h, c.kernel_w, c.stride, c.padding};
}

int storage_bytes(Format f) {
  return numerics::traits(f).storage_bytes;
}

const char* byte_ptr(const Operand& x, std::int64_t element) {
  return static_cast<const char*>(x.data) + element * storage_bytes(x.format);
}

// n values of x (from element `at`) as float32 into out, with a pass's part applied.
void decode(const Operand& x, std::int64_t at, std::int64_t n, Part part, float* out) {
  numerics::decode_array(byte_ptr(x, at), static_cast<std::size_t>(n), x.format, out);
  gemm_detail::apply_part(out, n, part);
}

// The elements of x as the oneDNN route's source type: x itself where it is stored so, else
// decoded (the part applied) into `buffer`. Values are bf16 values where type is bf16.
const void* source(const Operand& x, std::int64_t n, Part part, SourceType type,
                   ScratchBuffer& buffer) {
  if (type == SourceType::f32 && x.format == Format::float32 && part == Part::whole) return x.data;
  if (type == SourceType::bf16 && x.format == Format::bfloat16 && part != Part::lo) return x.data;
  constexpr std::int64_t kRun = 4096;
  if (type == SourceType::f32) {
    float* out = buffer.as<float>(static_cast<std::size_t>(n));
    parallel_chunks((n + kRun - 1) / kRun,
                    [&](std::int64_t c0, std::int64_t c1) {
                      const std::int64_t b = c0 * kRun, e = std::min(n, c1 * kRun);
                      decode(x, b, e - b, part, out + b);
                    },
                    8, 1);
    return out;
  }
  auto* out = buffer.as<std::uint16_t>(static_cast<std::size_t>(n));
  parallel_chunks((n + kRun - 1) / kRun,
                  [&](std::int64_t c0, std::int64_t c1) {
                    float tmp[kRun];
                    for (std::int64_t b = c0 * kRun; b < std::min(n, c1 * kRun); b += kRun) {
                      const std::int64_t len = std::min(kRun, n - b);
                      decode(x, b, len, part, tmp);
                      // A bf16 value's bits are its float32 bits' top half, exactly.
                      for (std::int64_t i = 0; i < len; ++i) {
                        std::uint32_t u;
                        std::memcpy(&u, &tmp[i], 4);
                        out[b + i] = static_cast<std::uint16_t>(u >> 16);
                      }
                    }
                  },
                  8, 1);
  return out;
}

struct Sources {
  ScratchBuffer x, w, dy, db;
};
Sources& sources() {
  thread_local Sources s;
  return s;
}

void run_onednn(bool bf16, ProductKind kind, const ConvKey& c, const ConvBuffers& b,
                const GemmPrecision& p) {
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, bf16);
  if (passes.count != 1) {
    throw Error("conv2d: oneDNN's convolutions take one pass, " +
                std::string(numerics::name(p.format)) + " at " + std::to_string(p.passes) +
                " passes needs " + std::to_string(passes.count));
  }
  const Part part = passes.pass[0].a;  // one pass reads the same part of both sources
  const SourceType type = bf16 ? SourceType::bf16 : SourceType::f32;
  const std::int64_t oh = (c.height + 2 * c.padding - c.kernel_h) / c.stride + 1;
  const std::int64_t ow = (c.width + 2 * c.padding - c.kernel_w) / c.stride + 1;
  const std::int64_t nx = c.batch * c.channels * c.height * c.width;
  const std::int64_t nw = c.out_channels * c.channels * c.kernel_h * c.kernel_w;
  const std::int64_t ny = c.batch * c.out_channels * oh * ow;
  Sources& s = sources();
  switch (kind) {
    case ProductKind::conv_forward:
      conv_detail::onednn_conv_forward(c, type, source(b.x, nx, part, type, s.x),
                                       source(b.w, nw, part, type, s.w), b.bias, b.y);
      return;
    case ProductKind::conv_backward_data:
      conv_detail::onednn_conv_backward_data(c, type, source(b.dy, ny, part, type, s.dy),
                                             source(b.w, nw, part, type, s.w), b.dx);
      return;
    case ProductKind::conv_backward_weights: {
      // The bias gradient sums the H values of dy, not the parts a pass multiplies (POL 2's
      // bfloat16 roundings of float16 values): then it is summed from dy itself.
      const bool own_db = c.bias && part != Part::whole;
      float* db = own_db ? s.db.as<float>(static_cast<std::size_t>(c.out_channels)) : b.db;
      conv_detail::onednn_conv_backward_weights(c, type, source(b.x, nx, part, type, s.x),
                                                source(b.dy, ny, part, type, s.dy), b.dw, db);
      if (own_db) {
        const auto* dy =
            static_cast<const float*>(source(b.dy, ny, Part::whole, SourceType::f32, s.dy));
        conv2d_bias_gradient(dy, c.batch, c.out_channels, oh * ow, b.db);
      }
      return;
    }
    case ProductKind::matmul:
      break;
  }
  throw Error("conv2d: a matrix product is not a convolution's");
}

// ---- the reference route: im2col + mantissa's GEMM ----

struct GemmScratch {
  ScratchBuffer cols, grad;
};
GemmScratch& gemm_scratch() {
  thread_local GemmScratch s;
  return s;
}

// fn(n) for every image, spread over the threads.
template <class Fn>
void per_image(std::int64_t batch, std::int64_t work, Fn&& fn) {
  parallel_chunks(
      batch,
      [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) fn(n);
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(work, 1)), 1);
}

float* image_buffer(std::int64_t n) {
  thread_local ScratchBuffer buffer;
  return buffer.as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

// Every image's patches side by side: [patch, batch * spatial], float32 (H values).
float* make_cols(const ConvKey& c, const Operand& x) {
  const Conv2dGeometry g = geometry(c);
  const std::int64_t spatial = g.out_h() * g.out_w(), patch = g.patch();
  const std::int64_t wide = c.batch * spatial, image = c.channels * c.height * c.width;
  float* cols = gemm_scratch().cols.as<float>(static_cast<std::size_t>(patch * wide));
  per_image(c.batch, patch * spatial, [&](std::int64_t n) {
    float* xi = image_buffer(image + patch * spatial);
    float* ci = xi + image;
    decode(x, n * image, image, Part::whole, xi);
    im2col(xi, g, ci, spatial);
    for (std::int64_t q = 0; q < patch; ++q) {
      std::copy_n(ci + q * spatial, spatial, cols + q * wide + n * spatial);
    }
  });
  return cols;
}

// dy laid out as the forward's product: [out_channels, batch * spatial], float32.
float* gather_grad(const ConvKey& c, const Operand& dy, std::int64_t spatial) {
  const std::int64_t wide = c.batch * spatial;
  float* g = gemm_scratch().grad.as<float>(static_cast<std::size_t>(c.out_channels * wide));
  per_image(c.batch, c.out_channels * spatial, [&](std::int64_t n) {
    for (std::int64_t o = 0; o < c.out_channels; ++o) {
      decode(dy, (n * c.out_channels + o) * spatial, spatial, Part::whole,
             g + o * wide + n * spatial);
    }
  });
  return g;
}

void run_gemm(MatmulRoute route, ProductKind kind, const ConvKey& c, const ConvBuffers& b,
              GemmPrecision p) {
  p.route = route;
  const Conv2dGeometry g = geometry(c);
  const std::int64_t spatial = g.out_h() * g.out_w(), patch = g.patch();
  const std::int64_t wide = c.batch * spatial, image = c.channels * c.height * c.width;
  switch (kind) {
    case ProductKind::conv_forward: {
      const float* cols = make_cols(c, b.x);
      const float* bias = c.bias ? b.bias : nullptr;
      float* y = b.y;
      // [out_channels, batch * spatial] back to [batch, out_channels, spatial] (+ bias).
      gemm(
          GemmShape::dense(c.out_channels, wide, patch), b.w, cols,
          [&](const GemmTile& t) {
            for (std::int64_t r = 0; r < t.rows; ++r) {
              const std::int64_t o = t.row0 + r;
              const float* v = t.values + r * t.ld;
              const float add = bias != nullptr ? bias[o] : 0.0f;
              for (std::int64_t j = 0; j < t.cols;) {
                const std::int64_t col = t.col0 + j, n = col / spatial, s = col % spatial;
                const std::int64_t len = std::min(t.cols - j, spatial - s);
                float* out = y + (n * c.out_channels + o) * spatial + s;
                for (std::int64_t i = 0; i < len; ++i) out[i] = v[j + i] + add;
                j += len;
              }
            }
          },
          p);
      return;
    }
    case ProductKind::conv_backward_data: {
      const float* gall = gather_grad(c, b.dy, spatial);
      float* dcols = gemm_scratch().cols.as<float>(static_cast<std::size_t>(patch * wide));
      gemm(GemmShape::dense(patch, wide, c.out_channels, true, false), b.w, gall, dcols, false, p);
      per_image(c.batch, image, [&](std::int64_t n) {
        std::fill(b.dx + n * image, b.dx + (n + 1) * image, 0.0f);
        col2im(dcols + n * spatial, g, b.dx + n * image, wide);
      });
      return;
    }
    case ProductKind::conv_backward_weights: {
      const float* cols = make_cols(c, b.x);
      const float* gall = gather_grad(c, b.dy, spatial);
      gemm(GemmShape::dense(c.out_channels, patch, wide, false, true), gall, cols, b.dw, false, p);
      if (c.bias) conv2d_bias_gradient(gall, 1, c.out_channels, wide, b.db);
      return;
    }
    case ProductKind::matmul:
      break;
  }
  throw Error("conv2d: a matrix product is not a convolution's");
}

// Where a product went.
enum class Ran : std::uint8_t { not_here, y, y_stored };

// The fp32 route's own convolution for small patches (direct_conv.hpp): the forward and the
// weight gradient; not_here where it does not take the product.
Ran run_direct(ProductKind kind, const ConvKey& c, const ConvBuffers& b, const GemmPrecision& p) {
  if (kind == ProductKind::conv_backward_data || !conv_detail::direct_conv_fits(c)) {
    return Ran::not_here;
  }
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, false);
  const Part part = passes.pass[0].a;  // the fp32 route takes one pass
  if (kind == ProductKind::conv_forward) {
    const bool stored = b.y_stored != nullptr && b.y_format != Format::float32;
    conv_detail::direct_conv_forward(c, b.x, b.w, b.bias, part, b.y, stored ? b.y_stored : nullptr,
                                     b.y_format);
    return stored ? Ran::y_stored : Ran::y;
  }
  // The bias gradient sums dy's H values, not the parts a pass multiplies.
  const bool own_db = c.bias && part != Part::whole;
  conv_detail::direct_conv_backward_weights(c, b.x, b.dy, part, b.dw,
                                            c.bias && !own_db ? b.db : nullptr);
  if (own_db) {
    const std::int64_t oh = (c.height + 2 * c.padding - c.kernel_h) / c.stride + 1;
    const std::int64_t ow = (c.width + 2 * c.padding - c.kernel_w) / c.stride + 1;
    const std::int64_t ny = c.batch * c.out_channels * oh * ow;
    const auto* dy =
        static_cast<const float*>(source(b.dy, ny, Part::whole, SourceType::f32, sources().dy));
    conv2d_bias_gradient(dy, c.batch, c.out_channels, oh * ow, b.db);
  }
  return Ran::y;
}

// Whether the forward's result went to y_stored.
bool run_on(MatmulRoute route, ProductKind kind, const ConvKey& c, const ConvBuffers& b,
            const GemmPrecision& p) {
  if (route == MatmulRoute::fp32) {
    if (const Ran r = run_direct(kind, c, b, p); r != Ran::not_here) return r == Ran::y_stored;
  }
  switch (route) {
    case MatmulRoute::onednn_fp32:
      run_onednn(false, kind, c, b, p);
      return false;
    case MatmulRoute::onednn_bf16:
      run_onednn(true, kind, c, b, p);
      return false;
    case MatmulRoute::fp32:
    case MatmulRoute::bf16:
    case MatmulRoute::amx:
      run_gemm(route, kind, c, b, p);
      return false;
    case MatmulRoute::automatic:
      break;
  }
  throw Error("conv2d: automatic is not a route of its own");
}

}  // namespace

void conv2d_bias_gradient(const float* dy, std::int64_t batch, std::int64_t channels,
                          std::int64_t spatial, float* db) {
  parallel_chunks(
      channels,
      [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) {
          float part[16] = {};
          for (std::int64_t n = 0; n < batch; ++n) {
            const float* v = dy + (n * channels + o) * spatial;
            std::int64_t i = 0;
            for (; i + 16 <= spatial; i += 16) {
              for (int l = 0; l < 16; ++l) part[l] += v[i + l];
            }
            for (; i < spatial; ++i) part[i % 16] += v[i];
          }
          float sum = 0.0f;
          for (float x : part) sum += x;
          db[o] = sum;
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(batch * spatial, 1)),
      1);
}

bool conv2d_product_on(MatmulRoute route, ProductKind kind, const ConvKey& shape,
                       const ConvBuffers& b, const GemmPrecision& p) {
  const GemmKey key = conv_key(kind, shape, p.format, p.passes, true);
  if (const std::string why = route_unavailable(route, key); !why.empty()) {
    throw Error("conv2d: route " + std::string(route_name(route)) + " cannot run " + describe(key) +
                " here: " + why);
  }
  return run_on(route, kind, shape, b, p);
}

void conv2d_product_ref(ProductKind kind, const ConvKey& shape, const ConvBuffers& b,
                        const GemmPrecision& p) {
  run_gemm(MatmulRoute::fp32, kind, shape, b, p);
}

bool conv2d_product(ProductKind kind, const ConvKey& shape, const ConvBuffers& b,
                    const GemmPrecision& p) {
  if (p.algorithm == GemmAlgorithm::decomposed) {  // the passes run on the fp32 GEMM route
    run_gemm(MatmulRoute::fp32, kind, shape, b, p);
    return false;
  }
  const GemmKey key = conv_key(kind, shape, p.format, p.passes, !omp_in_parallel());
  MatmulRoute preference = effective_preference(p.format, p.route);
  if (preference == MatmulRoute::onednn_bf16 && !route_unavailable(preference, key).empty()) {
    preference = MatmulRoute::bf16;  // the passes oneDNN's bf16 convolution cannot make
  }
  const MatmulRoute route =
      choose_route(key, preference, [&](MatmulRoute r) { run_on(r, kind, shape, b, p); });
  return run_on(route, kind, shape, b, p);
}

}  // namespace mantissa::kernels
