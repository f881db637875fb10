// matmul and linear: the matmul class (inputs in H, fp32 accumulation). Inputs go to the GEMM
// in their stored format (it decodes them while packing); results are written in H straight
// from the GEMM's finished blocks, with the bias added on the way.
#include "linear_support.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;
using precision::QuantRole;

struct MatmulNode : Node {
  Tensor a, b;  // the operands in H (as the forward multiplied them)
  std::int64_t batch, m, k, n;
  bool batched_b;
  const char* name() const override { return "matmul"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const Tensor gc = g.contiguous();
    // dB sums over the batch when B is shared: float32 then.
    const RoundingProbe lost(QuantRole::input_grad, name(), layer);
    Tensor da = Tensor::empty(a.shape(), grad_format(0));
    Tensor db = batched_b ? Tensor::empty(b.shape(), grad_format(1)) : Tensor::zeros(b.shape());
    for (std::int64_t i = 0; i < batch; ++i) {
      const kernels::Operand gi = operand(gc, i * m * n);
      const kernels::Operand bi = operand(b, batched_b ? i * k * n : 0);
      const kernels::Operand ai = operand(a, i * m * k);
      // dA = G B^T ; dB (+)= A^T G
      kernels::gemm(GemmShape::dense(m, k, n, false, true), gi, bi,
                    write_rows(da, i * m * k, k, nullptr, lost.if_active()), gp);
      if (batched_b) {
        kernels::gemm(GemmShape::dense(k, n, m, true, false), ai, gi,
                      write_rows(db, i * k * n, n, nullptr, lost.if_active()), gp);
      } else {
        kernels::gemm(GemmShape::dense(k, n, m, true, false), ai, gi, db.f32(), true, gp);
      }
    }
    return {da, db};
  }
};

struct LinearNode : Node {
  Tensor x, w;  // in H: x [rows, in] as the forward read it, w [out, in] the weight's H copy
  std::int64_t rows, in, out;
  bool has_bias;
  const char* name() const override { return "linear"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    const Tensor gc = g.contiguous();
    // dx = G W ; dW = G^T X ; db = column sums of G (fp32). Each written from the GEMM's
    // finished blocks, in the format its receiver wants; only those an input receives (the
    // first layer's input batch needs no dx).
    Tensor dx, dw;
    const RoundingProbe lost(QuantRole::input_grad, name(), layer);
    const LinearSizes sizes{rows, in, out};
    const bool wants_db = has_bias && needs_grad(2);
    // One pass over G where the products' route would copy it (linear_backward_operand), the
    // bias gradient summed in it.
    Tensor db = wants_db ? Tensor::zeros(Shape{out}) : Tensor();
    const BackwardOperand g_in = linear_backward_operand(
        gc, sizes, gp, needs_grad(0), needs_grad(1), wants_db ? db.f32() : nullptr);
    if (wants_db && !g_in.decoded) db = bias_gradient(gc, rows, out);
    if (needs_grad(0)) {
      dx = Tensor::empty(x.shape(), grad_format(0));
      kernels::gemm(input_grad_product(sizes), g_in.g, operand(w),
                    write_rows(dx, 0, in, nullptr, lost.if_active()), gp);
    }
    if (needs_grad(1)) {
      dw = Tensor::empty(Shape{out, in}, grad_format(1));
      kernels::gemm(weight_grad_product(sizes), g_in.g, operand(x),
                    write_rows(dw, 0, in, nullptr, lost.if_active()), gp);
    }
    return {dx, dw, db};
  }
};

}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  if (as.size() < 2 || bs.size() < 2) {
    shape_error("matmul", "operands need at least 2 dimensions (got " + as.to_string() + " and " +
                              bs.to_string() + ")");
  }
  const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const bool batched_b = bs.size() > 2;
  if (bs[bs.size() - 2] != k ||
      (batched_b && (bs.size() != as.size() ||
                     Shape(as.begin(), as.end() - 2) != Shape(bs.begin(), bs.end() - 2)))) {
    shape_error("matmul",
                "shapes " + as.to_string() + " and " + bs.to_string() + " do not multiply");
  }
  const std::int64_t batch = m * k > 0 ? as.numel() / (m * k) : 0;
  const Policy& p = precision::current_policy();
  const Tensor ah = a.value_rounded_to(p.half), bh = b.value_rounded_to(p.half);
  RoundingProbe(QuantRole::input, "matmul").rounded(a.value(), ah);
  RoundingProbe(QuantRole::weight, "matmul").rounded(b.value(), bh);
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(n);
  Tensor y = Tensor::empty(ys, result_format(p));
  const kernels::GemmPrecision gp = gemm_precision(p);
  const RoundingProbe lost(QuantRole::output, "matmul");
  for (std::int64_t i = 0; i < batch; ++i) {
    kernels::gemm(GemmShape::dense(m, n, k), operand(ah, i * m * k),
                  operand(bh, batched_b ? i * k * n : 0),
                  write_rows(y, i * m * n, n, nullptr, lost.if_active()), gp);
  }
  return make_result(std::move(y), {a, b}, [&] {
    auto node = std::make_shared<MatmulNode>();
    node->a = ah;
    node->b = bh;
    node->batch = batch;
    node->m = m;
    node->k = k;
    node->n = n;
    node->batched_b = batched_b;
    return node;
  });
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  // Named variables, not a structured binding: the node's lambda captures them (clang 14,
  // which the fuzz build uses, cannot capture a structured binding).
  const LinearSizes sizes = linear_sizes(x, weight, bias);
  const std::int64_t rows = sizes.rows, in = sizes.in, out = sizes.out;
  const Policy& p = precision::current_policy();
  const Tensor xh = x.value_rounded_to(p.half);        // free when x came from an op
  const Tensor& wh = weight.value_rounded_to(p.half);  // the weight's H copy, once per step
  RoundingProbe(QuantRole::input, "linear").rounded(x.value(), xh);
  RoundingProbe(QuantRole::weight, "linear").rounded(weight.value(), wh);
  Tensor y = Tensor::empty(linear_output_shape(xs, out), result_format(p));
  const Tensor b32 = bias.defined() ? to_format(bias.value(), Format::float32, false) : Tensor();
  // The product, the bias add and the rounding to H in one pass over each finished block.
  const RoundingProbe lost(QuantRole::output, "linear");
  kernels::gemm(GemmShape::dense(rows, out, in, false, true), operand(xh), operand(wh),
                write_rows(y, 0, out, bias.defined() ? b32.f32() : nullptr, lost.if_active()),
                gemm_precision(p));
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(y), inputs, [&] {
    auto node = std::make_shared<LinearNode>();
    node->x = xh;
    node->w = wh;
    node->rows = rows;
    node->in = in;
    node->out = out;
    node->has_bias = bias.defined();
    return node;
  });
}

}  // namespace mantissa::autograd
