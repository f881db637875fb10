// conv2d and max_pool2d. conv2d's three products (forward, input gradient, weight gradient)
// run on the routes kernels/conv_route.hpp chooses by measurement, with the matmul class's
// precision rules: the input and the weight rounded to H, products exact, float32 sums.
#include <algorithm>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/conv_route.hpp"
#include "mantissa/tensor/storage.hpp"
#include "op_support.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using precision::QuantRole;

struct Conv2dNode : Node {
  Tensor x, w;  // the input and the weight in H, as the forward multiplied them
  kernels::ConvKey shape;
  const char* name() const override { return "conv2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const Tensor gc = g.contiguous();  // in H under a half policy, as it arrived
    // Only the gradients something receives are made: the image batch entering the first
    // convolution needs none.
    Tensor dx, dw, db;
    if (needs_grad(0)) {
      dx = Tensor::empty(x.shape());
      kernels::ConvBuffers b;
      b.dy = operand(gc);
      b.w = operand(w);
      b.dx = dx.f32();
      kernels::conv2d_product(kernels::ProductKind::conv_backward_data, shape, b, gp);
    }
    if (needs_grad(1) || (shape.bias && needs_grad(2))) {
      dw = Tensor::empty(w.shape());
      if (shape.bias) db = Tensor::empty(Shape{shape.out_channels});
      kernels::ConvBuffers b;
      b.x = operand(x);
      b.dy = operand(gc);
      b.dw = dw.f32();
      b.db = shape.bias ? db.f32() : nullptr;
      kernels::conv2d_product(kernels::ProductKind::conv_backward_weights, shape, b, gp);
    }
    return {dx, dw, db};
  }
};

struct MaxPoolNode : Node {
  // Per output element: the winning index in its plane (pooled storage: a step reuses the
  // last step's block instead of new pages).
  tensor::StorageRef argmax;
  Shape in_shape;
  std::int64_t planes, in_size, out_size, kernel, stride;
  bool relu = false;  // relu_max_pool2d: an argmax of -1 passes no gradient
  const char* name() const override { return relu ? "relu_max_pool2d" : "max_pool2d"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    if (relu && g.format() == Format::bfloat16 && grad_format(0) == Format::bfloat16) {
      // bfloat16 in and out: the kernel reads and writes the bit patterns (0 + dy is dy).
      const Tensor gc = g.contiguous();
      Tensor dx = Tensor::empty(in_shape, Format::bfloat16);
      if (kernels::relu_max_pool2d_backward_bf16(static_cast<const std::uint16_t*>(gc.raw_data()),
                                                 static_cast<const std::int32_t*>(argmax->data()),
                                                 planes, in_shape[2], in_shape[3], kernel, stride,
                                                 static_cast<std::uint16_t*>(dx.raw_data()))) {
        return {dx};
      }
    }
    const Decoded gd(g, 0);
    // Made a tile of planes at a time in the gradient's format: rounding commutes with
    // placing each dy (relu_max_pool2d's windows do not overlap, max_pool2d's sums are
    // float32 within the tile's planes).
    return {produce(
        in_shape, grad_format(0), in_size, [&](std::int64_t p0, std::int64_t p1, float* out) {
          const float* dy = gd.range(p0 * out_size, (p1 - p0) * out_size);
          const std::int32_t* at = static_cast<const std::int32_t*>(argmax->data()) + p0 * out_size;
          if (relu) {
            kernels::relu_max_pool2d_backward(dy, at, p1 - p0, in_shape[2], in_shape[3], kernel,
                                              stride, out);
          } else {
            kernels::max_pool2d_backward(dy, at, p1 - p0, in_size, out_size, out);
          }
        })};
  }
};

// relu_max_pool2d of bfloat16 x into a bfloat16 result by the kernel on the bit patterns, or
// an undefined tensor where it does not take the windows (kernels::relu_max_pool2d_*_bf16).
Tensor relu_max_pool_bf16(const Tensor& x, std::int64_t kernel, std::int64_t stride,
                          const Shape& out_shape, std::int32_t* argmax) {
  const Tensor xc = x.contiguous();
  Tensor y = Tensor::empty(out_shape, Format::bfloat16);
  const Shape& xs = x.shape();
  if (!kernels::relu_max_pool2d_forward_bf16(static_cast<const std::uint16_t*>(xc.raw_data()),
                                             xs[0] * xs[1], xs[2], xs[3], kernel, stride,
                                             static_cast<std::uint16_t*>(y.raw_data()), argmax)) {
    return Tensor();
  }
  return y;
}

}  // namespace

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                std::int64_t stride, std::int64_t padding) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  if (xs.size() != 4 || ws.size() != 4 || xs[1] != ws[1] || stride < 1 || padding < 0 ||
      xs.numel() == 0 || ws.numel() == 0) {
    shape_error("conv2d", "input " + xs.to_string() + " and weight " + ws.to_string() +
                              ", stride " + std::to_string(stride) + ", padding " +
                              std::to_string(padding) +
                              " (expected [n, c, h, w] and [o, c, kh, kw], every size >= 1, "
                              "stride >= 1, padding >= 0)");
  }
  const kernels::Conv2dGeometry geo{xs[1], xs[2], xs[3], ws[2], ws[3], stride, padding};
  if (geo.out_h() < 1 || geo.out_w() < 1) shape_error("conv2d", "kernel larger than the input");
  if (bias.defined() && (bias.shape().size() != 1 || bias.shape()[0] != ws[0])) {
    shape_error("conv2d", "bias " + bias.shape().to_string() + " for weight " + ws.to_string() +
                              " (expected [" + std::to_string(ws[0]) + "])");
  }
  const kernels::ConvKey shape{.batch = xs[0],
                               .channels = xs[1],
                               .height = xs[2],
                               .width = xs[3],
                               .out_channels = ws[0],
                               .kernel_h = ws[2],
                               .kernel_w = ws[3],
                               .stride = stride,
                               .padding = padding,
                               .bias = bias.defined()};
  const Policy& p = precision::current_policy();
  const Format format = result_format(p);
  const Tensor& wh = weight.value_rounded_to(p.half);
  const Tensor xh = to_format(x.value(), format, false);  // the input in H, once
  RoundingProbe(QuantRole::input, "conv2d").rounded(x.value(), xh);
  RoundingProbe(QuantRole::weight, "conv2d").rounded(weight.value(), wh);
  const Tensor b32 = bias.defined() ? to_format(bias.value(), Format::float32, false) : Tensor();
  const Shape out_shape{xs[0], ws[0], geo.out_h(), geo.out_w()};
  // The float32 result, then rounded to H (the product's one rounding): by the route while
  // the results are in cache where it can (y_stored), else here. A sampled step's probe
  // compares the two whole tensors, so it takes the float32 result.
  Tensor y32 = Tensor::empty(out_shape);
  const RoundingProbe lost(QuantRole::output, "conv2d");
  Tensor y = format == Format::float32 ? y32 : Tensor::empty(out_shape, format);
  kernels::ConvBuffers b;
  b.x = operand(xh);
  b.w = operand(wh);
  b.bias = bias.defined() ? b32.f32() : nullptr;
  b.y = y32.f32();
  if (format != Format::float32 && !lost.active()) {
    b.y_stored = y.raw_data();
    b.y_format = format;
  }
  const bool stored =
      kernels::conv2d_product(kernels::ProductKind::conv_forward, shape, b, gemm_precision(p));
  if (format != Format::float32 && !stored) {
    kernels::parallel_chunks(y.numel(), [&](std::int64_t begin, std::int64_t end) {
      write_values(y, begin, y32.f32() + begin, end - begin);
    });
    lost.rounded(y32, y);
  }
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(y), inputs, [&] {
    auto node = std::make_shared<Conv2dNode>();
    node->x = xh;
    node->w = wh;
    node->shape = shape;
    return node;
  });
}

namespace {

// max_pool2d, or with `relu` max_pool2d(relu(x)) in one pass (kernels::relu_max_pool2d_*).
Variable pool(const char* name, const Variable& x, std::int64_t kernel, std::int64_t stride,
              bool relu) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  const Shape& xs = x.shape();
  if (xs.size() != 4 || kernel < 1 || stride < 1 || xs[2] < kernel || xs[3] < kernel) {
    shape_error(name, "input " + xs.to_string() + " with kernel " + std::to_string(kernel) +
                          ", stride " + std::to_string(stride) +
                          " (expected [n, c, h, w], h, w >= kernel >= 1, stride >= 1)");
  }
  const std::int64_t oh = (xs[2] - kernel) / stride + 1, ow = (xs[3] - kernel) / stride + 1;
  const std::int64_t planes = xs[0] * xs[1], in_size = xs[2] * xs[3], out_size = oh * ow;
  // planes * out_size <= the input's element count: no overflow.
  tensor::StorageRef argmax(
      tensor::Storage::create(static_cast<std::size_t>(planes * out_size) * sizeof(std::int32_t)));
  const Format format = result_format(precision::current_policy());
  const Shape out_shape{xs[0], xs[1], oh, ow};
  auto* at = static_cast<std::int32_t*>(argmax->data());
  Tensor y = relu && format == Format::bfloat16 && x.value().format() == Format::bfloat16
                 ? relu_max_pool_bf16(x.value(), kernel, stride, out_shape, at)
                 : Tensor();
  if (!y.defined()) {
    const Decoded xd(x.value(), 0);
    // The maximum of H values (and 0) is an H value: the result is exact in H.
    y = produce(out_shape, format, out_size, [&](std::int64_t p0, std::int64_t p1, float* out) {
      const float* in = xd.range(p0 * in_size, (p1 - p0) * in_size);
      std::int32_t* ap = at + p0 * out_size;
      if (relu) {
        kernels::relu_max_pool2d_forward(in, p1 - p0, xs[2], xs[3], kernel, stride, out, ap);
      } else {
        kernels::max_pool2d_forward(in, p1 - p0, xs[2], xs[3], kernel, stride, out, ap);
      }
    });
  }
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<MaxPoolNode>();
    node->argmax = std::move(argmax);
    node->in_shape = xs;
    node->planes = planes;
    node->in_size = in_size;
    node->out_size = out_size;
    node->kernel = kernel;
    node->stride = stride;
    node->relu = relu;
    return node;
  });
}

}  // namespace

Variable max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride) {
  return pool("max_pool2d", x, kernel, stride, false);
}

Variable relu_max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride) {
  return pool("relu_max_pool2d", x, kernel, stride, true);
}

}  // namespace mantissa::autograd
