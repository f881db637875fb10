// conv2d (im2col + GEMM, so it follows the matmul-class precision rules) and max_pool2d.
#include <algorithm>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/numerics/convert.hpp"
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

struct Conv2dNode : Node {
  Tensor cols, w32;  // the batch's patches [patch, batch * spatial] and the weight, H values
  Shape x_shape;
  kernels::Conv2dGeometry geo;
  std::int64_t batch, out_channels;
  bool has_bias;
  const char* name() const override { return "conv2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const std::int64_t spatial = geo.out_h() * geo.out_w(), patch = geo.patch();
    const std::int64_t wide = batch * spatial, image = geo.channels * geo.height * geo.width;
    // The output gradient laid out as the forward's product: [out_channels, batch * spatial].
    Tensor g_all = new_f32(Shape{out_channels, wide});
    per_image(batch, out_channels * spatial, [&](std::int64_t n) {
      for (std::int64_t o = 0; o < out_channels; ++o) {
        std::copy_n(g.f32() + (n * out_channels + o) * spatial, spatial,
                    g_all.f32() + o * wide + n * spatial);
      }
    });
    Tensor dw = new_f32(w32.shape());
    Tensor dcols = new_f32(Shape{patch, wide});
    // dW = G cols^T ; dcols = W^T G (one GEMM each for the whole batch)
    kernels::gemm(GemmShape::dense(out_channels, patch, wide, false, true), g_all.f32(), cols.f32(),
                  dw.f32(), false, gp);
    kernels::gemm(GemmShape::dense(patch, wide, out_channels, true, false), w32.f32(), g_all.f32(),
                  dcols.f32(), false, gp);
    Tensor dx = Tensor::zeros(x_shape);
    per_image(batch, image, [&](std::int64_t n) {  // each image's dx is its own
      kernels::col2im(dcols.f32() + n * spatial, geo, dx.f32() + n * image, wide);
    });
    Tensor db;
    if (has_bias) {
      db = Tensor::zeros(Shape{out_channels});
      for (std::int64_t o = 0; o < out_channels; ++o) {
        double acc = 0;
        for (std::int64_t i = 0; i < wide; ++i) acc += g_all.f32()[o * wide + i];
        db.f32()[o] = static_cast<float>(acc);
      }
    }
    return {dx, dw, db};
  }
};

struct MaxPoolNode : Node {
  Tensor argmax;  // int32 indices stored in a float32-sized buffer
  Shape in_shape;
  std::int64_t planes, in_size, out_size;
  const char* name() const override { return "max_pool2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = new_f32(in_shape);
    kernels::max_pool2d_backward(g.f32(), reinterpret_cast<const std::int32_t*>(argmax.f32()),
                                 planes, in_size, out_size, dx.f32());
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
  const Tensor x32 = f32(x.value());
  const Tensor& w32 = weight.value_rounded_to(p.half);
  const std::int64_t wide = batch * spatial, image = geo.channels * geo.height * geo.width;
  // Every image's patches side by side, then one GEMM for the batch.
  Tensor cols = new_f32(Shape{patch, wide});
  per_image(batch, patch * spatial, [&](std::int64_t n) {  // each image's columns are its own
    kernels::im2col(x32.f32() + n * image, geo, cols.f32() + n * spatial, wide);
  });
  round_in_place(cols.f32(), cols.numel(), p.half);
  Tensor y_all = new_f32(Shape{out_channels, wide});
  kernels::gemm(GemmShape::dense(out_channels, wide, patch), w32.f32(), cols.f32(), y_all.f32(),
                false, gemm_precision(p));
  Tensor y = new_f32(Shape{batch, out_channels, geo.out_h(), geo.out_w()});
  const Tensor b32 = bias.defined() ? f32(bias.value()) : Tensor();
  // [out_channels, batch * spatial] back to [batch, out_channels, spatial] with the bias, and
  // rounded to H, image by image.
  Stored stored =
      fill_and_store(y, p, batch, out_channels * spatial, [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) {
          for (std::int64_t o = 0; o < out_channels; ++o) {
            const float add = bias.defined() ? b32.f32()[o] : 0.0f;
            const float* src = y_all.f32() + o * wide + n * spatial;
            float* dst = y.f32() + (n * out_channels + o) * spatial;
            for (std::int64_t s = 0; s < spatial; ++s) dst[s] = src[s] + add;
          }
        }
      });
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(stored), inputs, [&] {
    auto node = std::make_shared<Conv2dNode>();
    node->cols = cols;
    node->w32 = w32;
    node->x_shape = xs;
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
  const std::int64_t planes = xs[0] * xs[1];
  const Tensor x32 = f32(x.value());
  Tensor y = new_f32(Shape{xs[0], xs[1], oh, ow});
  Tensor argmax = new_f32(y.shape());
  kernels::max_pool2d_forward(x32.f32(), planes, xs[2], xs[3], kernel, stride, y.f32(),
                              reinterpret_cast<std::int32_t*>(argmax.f32()));
  return make_result(store(y, precision::current_policy()), {x}, [&] {
    auto node = std::make_shared<MaxPoolNode>();
    node->argmax = argmax;
    node->in_shape = xs;
    node->planes = planes;
    node->in_size = xs[2] * xs[3];
    node->out_size = oh * ow;
    return node;
  });
}

}  // namespace mantissa::autograd
