// conv2d (im2col + GEMM, so it follows the matmul-class precision rules) and max_pool2d.
// The patch matrix is made in H (packed) for the forward and made again in the backward from
// the saved input, rather than kept: it is kernel_h * kernel_w times the input's size.
#include <algorithm>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;

// fn(n) for every image n of the batch, images spread over the threads (each call touches
// only its image's slices); `work` is elements per image, to leave small batches serial.
template <class Fn>
void per_image(std::int64_t batch, std::int64_t work, Fn&& fn) {
  kernels::parallel_chunks(
      batch,
      [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) fn(n);
      },
      std::max<std::int64_t>(1, kernels::kParallelMinElements / std::max<std::int64_t>(work, 1)));
}

float* image_buffer(std::int64_t n) {
  thread_local kernels::ScratchBuffer buffer;
  return buffer.as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

// Every image's patches side by side: [patch, batch * spatial] in `format`, the GEMM's right
// operand for the whole batch.
Tensor make_cols(const Tensor& x, const kernels::Conv2dGeometry& geo, std::int64_t batch,
                 Format format) {
  const std::int64_t spatial = geo.out_h() * geo.out_w(), patch = geo.patch();
  const std::int64_t wide = batch * spatial, image = geo.channels * geo.height * geo.width;
  Tensor cols = Tensor::empty(Shape{patch, wide}, format);
  const Decoded xd(x, 0);
  per_image(batch, patch * spatial, [&](std::int64_t n) {  // each image's columns are its own
    float* c = image_buffer(patch * spatial);
    kernels::im2col(xd.range(n * image, image), geo, c, spatial);
    for (std::int64_t p = 0; p < patch; ++p) {
      write_values(cols, p * wide + n * spatial, c + p * spatial, spatial);
    }
  });
  return cols;
}

struct Conv2dNode : Node {
  Tensor x, w;  // the input as stored, the weight's H copy
  kernels::Conv2dGeometry geo;
  std::int64_t batch, out_channels;
  bool has_bias;
  const char* name() const override { return "conv2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const std::int64_t spatial = geo.out_h() * geo.out_w(), patch = geo.patch();
    const std::int64_t wide = batch * spatial, image = geo.channels * geo.height * geo.width;
    // The output gradient laid out as the forward's product: [out_channels, batch * spatial],
    // in the format it arrived in.
    const Tensor gc = g.contiguous();
    Tensor g_all = Tensor::empty(Shape{out_channels, wide}, gc.format());
    const int bytes = gc.element_bytes();
    per_image(batch, out_channels * spatial, [&](std::int64_t n) {
      for (std::int64_t o = 0; o < out_channels; ++o) {
        std::copy_n(
            static_cast<const char*>(gc.raw_data()) + (n * out_channels + o) * spatial * bytes,
            spatial * bytes,
            static_cast<char*>(g_all.raw_data()) + (o * wide + n * spatial) * bytes);
      }
    });
    const Tensor cols = make_cols(x, geo, batch, result_format(policy));
    Tensor dw = Tensor::empty(w.shape());
    Tensor dcols = Tensor::empty(Shape{patch, wide});
    // dW = G cols^T ; dcols = W^T G (one GEMM each for the whole batch)
    kernels::gemm(GemmShape::dense(out_channels, patch, wide, false, true), operand(g_all),
                  operand(cols), dw.f32(), false, gp);
    kernels::gemm(GemmShape::dense(patch, wide, out_channels, true, false), operand(w),
                  operand(g_all), dcols.f32(), false, gp);
    Tensor dx = Tensor::zeros(x.shape());
    per_image(batch, image, [&](std::int64_t n) {  // each image's dx is its own
      kernels::col2im(dcols.f32() + n * spatial, geo, dx.f32() + n * image, wide);
    });
    Tensor db;
    if (has_bias) {
      db = Tensor::zeros(Shape{out_channels});
      const Decoded gd(g_all, 0);
      for (std::int64_t o = 0; o < out_channels; ++o) {
        double acc = 0;
        for (std::int64_t t0 = 0; t0 < wide; t0 += kTileElements) {
          const std::int64_t len = std::min(kTileElements, wide - t0);
          const float* gr = gd.range(o * wide + t0, len);
          for (std::int64_t i = 0; i < len; ++i) acc += gr[i];
        }
        db.f32()[o] = static_cast<float>(acc);
      }
    }
    return {dx, dw, db};
  }
};

struct MaxPoolNode : Node {
  std::vector<std::int32_t> argmax;  // per output element: the winning index in its plane
  Shape in_shape;
  std::int64_t planes, in_size, out_size;
  const char* name() const override { return "max_pool2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = Tensor::empty(in_shape);
    const Decoded gd(g, 0);
    kernels::parallel_chunks(
        planes,
        [&](std::int64_t p0, std::int64_t p1) {
          const std::int64_t tile =
              std::max<std::int64_t>(1, kTileElements / std::max<std::int64_t>(out_size, 1));
          for (std::int64_t t0 = p0; t0 < p1; t0 += tile) {
            const std::int64_t t1 = std::min(p1, t0 + tile);
            kernels::max_pool2d_backward(gd.range(t0 * out_size, (t1 - t0) * out_size),
                                         argmax.data() + t0 * out_size, t1 - t0, in_size, out_size,
                                         dx.f32() + t0 * in_size);
          }
        },
        std::max<std::int64_t>(1,
                               kernels::kParallelMinElements / std::max<std::int64_t>(in_size, 1)));
    return {dx};
  }
};

}  // namespace

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                std::int64_t stride, std::int64_t padding) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  if (xs.size() != 4 || ws.size() != 4 || xs[1] != ws[1] || stride < 1 || padding < 0) {
    shape_error("conv2d", "input " + xs.to_string() + " and weight " + ws.to_string() +
                              " (expected [n, c, h, w] and [o, c, kh, kw], stride >= 1, "
                              "padding >= 0)");
  }
  const kernels::Conv2dGeometry geo{xs[1], xs[2], xs[3], ws[2], ws[3], stride, padding};
  if (geo.out_h() < 1 || geo.out_w() < 1) shape_error("conv2d", "kernel larger than the input");
  const std::int64_t batch = xs[0], out_channels = ws[0];
  const std::int64_t spatial = geo.out_h() * geo.out_w(), patch = geo.patch();
  const Policy& p = precision::current_policy();
  const Tensor& wh = weight.value_rounded_to(p.half);
  const Tensor cols = make_cols(x.value(), geo, batch, result_format(p));
  Tensor y = Tensor::empty(Shape{batch, out_channels, geo.out_h(), geo.out_w()}, result_format(p));
  const Tensor b32 = bias.defined() ? to_format(bias.value(), Format::float32, false) : Tensor();
  const float* bp = bias.defined() ? b32.f32() : nullptr;
  // The product [out_channels, batch * spatial] goes back to [batch, out_channels, spatial]
  // with the bias, rounded to H, block by block as the GEMM finishes them.
  kernels::gemm(
      GemmShape::dense(out_channels, batch * spatial, patch), operand(wh), operand(cols),
      [&](const kernels::GemmTile& t) {
        for (std::int64_t r = 0; r < t.rows; ++r) {
          const std::int64_t o = t.row0 + r;
          float* v = t.values + r * t.ld;
          for (std::int64_t j = 0; j < t.cols;) {
            const std::int64_t col = t.col0 + j;
            const std::int64_t n = col / spatial, s = col % spatial;
            const std::int64_t len = std::min(t.cols - j, spatial - s);
            if (bp != nullptr) {
              for (std::int64_t i = 0; i < len; ++i) v[j + i] += bp[o];
            }
            write_values(y, (n * out_channels + o) * spatial + s, v + j, len);
            j += len;
          }
        }
      },
      gemm_precision(p));
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(y), inputs, [&] {
    auto node = std::make_shared<Conv2dNode>();
    node->x = x.value();
    node->w = wh;
    node->geo = geo;
    node->batch = batch;
    node->out_channels = out_channels;
    node->has_bias = bias.defined();
    return node;
  });
}

Variable max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  const Shape& xs = x.shape();
  if (xs.size() != 4 || kernel < 1 || stride < 1 || xs[2] < kernel || xs[3] < kernel) {
    shape_error("max_pool2d", "input " + xs.to_string() + " with kernel " + std::to_string(kernel) +
                                  " (expected [n, c, h, w], h, w >= kernel)");
  }
  const std::int64_t oh = (xs[2] - kernel) / stride + 1, ow = (xs[3] - kernel) / stride + 1;
  const std::int64_t planes = xs[0] * xs[1], in_size = xs[2] * xs[3], out_size = oh * ow;
  std::vector<std::int32_t> argmax(static_cast<std::size_t>(planes * out_size));
  const Decoded xd(x.value(), 0);
  // The maximum of H values is an H value: the result is exact in H.
  Tensor y = produce(Shape{xs[0], xs[1], oh, ow}, result_format(precision::current_policy()),
                     out_size, [&](std::int64_t p0, std::int64_t p1, float* out) {
                       kernels::max_pool2d_forward(xd.range(p0 * in_size, (p1 - p0) * in_size),
                                                   p1 - p0, xs[2], xs[3], kernel, stride, out,
                                                   argmax.data() + p0 * out_size);
                     });
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<MaxPoolNode>();
    node->argmax = std::move(argmax);
    node->in_shape = xs;
    node->planes = planes;
    node->in_size = in_size;
    node->out_size = out_size;
    return node;
  });
}

}  // namespace mantissa::autograd
