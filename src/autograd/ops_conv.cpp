// conv2d (im2col + GEMM, so it follows the matmul-class precision rules) and max_pool2d.
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/conv.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;

struct Conv2dNode : Node {
  Tensor x32, w32;  // float32 holding H values
  kernels::Conv2dGeometry geo;
  std::int64_t batch, out_channels;
  bool has_bias;
  const char* name() const override { return "conv2d"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const std::int64_t spatial = geo.out_h() * geo.out_w(), patch = geo.patch();
    const std::int64_t image = geo.channels * geo.height * geo.width;
    Tensor dx = Tensor::zeros(x32.shape());
    Tensor dw = Tensor::zeros(w32.shape());
    Tensor db = has_bias ? Tensor::zeros(Shape{out_channels}) : Tensor();
    Tensor cols = new_f32(Shape{patch, spatial}), dcols = new_f32(Shape{patch, spatial});
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* gn = g.f32() + n * out_channels * spatial;
      kernels::im2col(x32.f32() + n * image, geo, cols.f32());
      numerics::round_to_format(cols.f32(), static_cast<std::size_t>(cols.numel()), policy.half);
      // dW += G_n cols^T ; dcols = W^T G_n
      kernels::gemm(GemmShape::dense(out_channels, patch, spatial, false, true), gn, cols.f32(),
                    dw.f32(), true, gp);
      kernels::gemm(GemmShape::dense(patch, spatial, out_channels, true, false), w32.f32(), gn,
                    dcols.f32(), false, gp);
      kernels::col2im(dcols.f32(), geo, dx.f32() + n * image);
      if (has_bias) {
        for (std::int64_t o = 0; o < out_channels; ++o) {
          float acc = 0;
          for (std::int64_t s = 0; s < spatial; ++s) acc += gn[o * spatial + s];
          db.f32()[o] += acc;
        }
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
  const Tensor x32 = rounded(x.value(), p.half);
  const Tensor& w32 = weight.value_rounded_to(p.half);
  Tensor y = new_f32(Shape{batch, out_channels, geo.out_h(), geo.out_w()});
  Tensor cols = new_f32(Shape{patch, spatial});
  const Tensor b32 = bias.defined() ? f32(bias.value()) : Tensor();
  for (std::int64_t n = 0; n < batch; ++n) {
    kernels::im2col(x32.f32() + n * geo.channels * geo.height * geo.width, geo, cols.f32());
    float* yn = y.f32() + n * out_channels * spatial;
    kernels::gemm(GemmShape::dense(out_channels, spatial, patch), w32.f32(), cols.f32(), yn, false,
                  gemm_precision(p));
    if (bias.defined()) {
      for (std::int64_t o = 0; o < out_channels; ++o) {
        for (std::int64_t s = 0; s < spatial; ++s) yn[o * spatial + s] += b32.f32()[o];
      }
    }
  }
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(store(y, p), inputs, [&] {
    auto node = std::make_shared<Conv2dNode>();
    node->x32 = x32;
    node->w32 = w32;
    node->geo = geo;
    node->batch = batch;
    node->out_channels = out_channels;
    node->has_bias = bias.defined();
    return node;
  });
}

Variable max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride) {
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
