// linear in fp8 (precision/fp8.hpp): the inputs of each product cast to fp8 with per-tensor
// scales, products accumulated in float32 and scaled back, everything else in H.
#include "linear_support.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/quant/fp8_cast.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;
using precision::Fp8Meta;
using precision::Fp8Slot;
using precision::QuantRole;

constexpr const char* kOp = "linear_fp8";

// t cast to fp8 with the slot's scale; what the cast found is recorded while gradients are on
// (a training step), not in evaluation, and on a sampled step what it lost (`layer`'s).
Tensor cast(const Tensor& t, Fp8Meta& meta, Fp8Slot slot, bool record,
            const precision::LayerName& layer) {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  const Tensor c = t.contiguous();
  Tensor out = Tensor::empty(c.shape(), meta.format(slot));
  const quant::Fp8CastStats s = quant::cast_to_fp8(c.raw_data(), c.format(), c.numel(),
                                                   meta.scale(slot), out.format(), out.raw_data());
  if (record) meta.record(slot, s.amax, s.overflows, s.underflows);
  RoundingProbe(role_of(slot), kOp, layer).rounded(c, out, meta.scale(slot), /*note_scale=*/true);
  return out;
}

// Products of fp8 values are exact in float32 on either route (fp8 values are bf16 values).
kernels::GemmPrecision fp8_gemm(const Policy& p) {
  return {Format::float8_e4m3, 1, kernels::GemmAlgorithm::automatic, p.matmul_route};
}

// 1 / (scale_a * scale_b), as two exact-as-possible reciprocals.
float dequant(float scale_a, float scale_b) {
  return (1.0f / scale_a) * (1.0f / scale_b);
}

// Blocks of the product times `factor` into a float32 matrix [rows, ld].
kernels::GemmEpilogue scaled_into(float* c, std::int64_t ld, float factor) {
  return [=](const kernels::GemmTile& t) {
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const float* v = t.values + r * t.ld;
      float* out = c + (t.row0 + r) * ld + t.col0;
      for (std::int64_t j = 0; j < t.cols; ++j) out[j] = v[j] * factor;
    }
  };
}

struct LinearFp8Node : Node, LinearNodeShape {
  Tensor xq, wq;  // fp8: x [rows, in] and the weight [out, in], as the forward multiplied them
  float x_scale, w_scale;
  std::shared_ptr<Fp8Meta> meta;
  const char* name() const override { return kOp; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = fp8_gemm(policy);
    const Tensor gc = g.contiguous();
    const float g_scale = meta->scale(Fp8Slot::grad);
    const Tensor gq = cast(gc, *meta, Fp8Slot::grad, true, layer);
    Tensor dx = Tensor::empty(Shape{rows, in});
    Tensor dw = Tensor::empty(Shape{out, in});
    // dx = G W ; dW = G^T X, each scaled back (G's fp8 codes decoded once where the products'
    // route would copy them to float32 twice); db = column sums of G (in H, fp32 sums)
    const LinearSizes sizes{rows, in, out};
    const kernels::Operand g_in = linear_backward_operand(gq, sizes, gp, true, true, nullptr).g;
    kernels::gemm(input_grad_product(sizes), g_in, operand(wq),
                  scaled_into(dx.f32(), in, dequant(g_scale, w_scale)), gp);
    kernels::gemm(weight_grad_product(sizes), g_in, operand(xq),
                  scaled_into(dw.f32(), in, dequant(g_scale, x_scale)), gp);
    const Tensor db = has_bias ? bias_gradient(gc, rows, out) : Tensor();
    return {dx.reshape(x_shape), dw, db};
  }
};

}  // namespace

Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                const std::shared_ptr<Fp8Meta>& fp8) {
  const Policy& p = precision::current_policy();
  if (!fp8 || !p.fp8.enabled) return linear(x, weight, bias);
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  // Named variables, not a structured binding: the node's lambda captures them (clang 14,
  // which the fuzz build uses, cannot capture a structured binding).
  const LinearSizes sizes = linear_sizes(x, weight, bias);
  const std::int64_t rows = sizes.rows, in = sizes.in, out = sizes.out;
  const bool record = grad_enabled();
  const float x_scale = fp8->scale(Fp8Slot::input), w_scale = fp8->scale(Fp8Slot::weight);
  const precision::LayerName& layer = precision::current_layer();
  const Tensor xq = cast(x.value(), *fp8, Fp8Slot::input, record, layer);
  const Tensor wq = cast(weight.value(), *fp8, Fp8Slot::weight, record, layer);
  Tensor y = Tensor::empty(linear_output_shape(xs, out), result_format(p));
  const Tensor b32 = bias.defined() ? to_format(bias.value(), Format::float32, false) : Tensor();
  const float* bp = bias.defined() ? b32.f32() : nullptr;
  const float factor = dequant(x_scale, w_scale);
  // The product scaled back, the bias added and the result rounded to H, block by block (and
  // on a sampled step, what the rounding lost).
  const RoundingProbe lost(QuantRole::output, kOp, layer);
  kernels::gemm(GemmShape::dense(rows, out, in, false, true), operand(xq), operand(wq),
                write_rows(y, 0, out, bp, lost.if_active(), factor), fp8_gemm(p));
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(y), inputs, [&] {
    auto node = std::make_shared<LinearFp8Node>();
    node->xq = xq;
    node->wq = wq;
    node->x_scale = x_scale;
    node->w_scale = w_scale;
    node->meta = fp8;
    node->set_shape(sizes, xs, bias.defined());
    return node;
  });
}

}  // namespace mantissa::autograd
