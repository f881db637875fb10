// linear under a block-scaled or current-scaled recipe (precision/recipe.hpp): each product's
// operands quantized at their quantization points (linear_quant_points.hpp), multiplied
// exactly with float32 sums (quant/block_operand.hpp), the bias and the result in H. The
// backward keeps the column-wise copy of x, and W's column-wise copy lives for the optimizer
// step at its format's width; W's row-wise copy, read once by the forward product, is made
// there as bfloat16 values (one copy per weight where the recipe has one scale tile shape
// for both: kept at its width).
#include "linear_quant_points.hpp"
#include "linear_support.hpp"
#include "mantissa/autograd/ops.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;
using precision::Fp8Slot;
using precision::LinearQuant;

// The weight's kept copies, made once per weight version (once per optimizer step): the
// column-wise one for the backward, and the row-wise one only where it is the same copy.
struct WeightCopies : precision::LinearQuantCache {
  const void* id = nullptr;
  std::uint64_t version = 0;
  QuantCopy row, col;  // row: defined where one_copy
};

const WeightCopies& weight_copies(const Variable& weight, LinearQuant& quant) {
  std::unique_ptr<precision::LinearQuantCache>& slot = quant.cache();
  auto* cached = dynamic_cast<WeightCopies*>(slot.get());
  if (cached != nullptr && cached->id == weight.id() && cached->version == weight.version()) {
    return *cached;
  }
  auto fresh = std::make_unique<WeightCopies>();
  fresh->id = weight.id();
  fresh->version = weight.version();
  const Tensor& w = weight.value();
  const std::int64_t out = w.shape()[0], in = w.shape()[1];
  const Tensor wc = w.contiguous();
  if (one_copy(quant.recipe(), Fp8Slot::weight)) {
    fresh->row = quantize_copy(wc, out, in, quant, Fp8Slot::weight, Along::last, Use::kept);
    fresh->col = fresh->row;
  } else {
    fresh->col = quantize_copy(wc, out, in, quant, Fp8Slot::weight, Along::rows, Use::kept);
  }
  slot = std::move(fresh);
  return static_cast<const WeightCopies&>(*slot);
}

using precision::QuantRole;

// q's fp8 element codes as bfloat16 bit patterns into `out` (rows x cols, bfloat16), on all
// threads; returns out's bits.
const std::uint16_t* elements_as_bf16(const quant::PackedBlocks& q, Tensor& out) {
  auto* bits = static_cast<std::uint16_t*>(out.raw_data());
  const std::uint8_t* codes = q.elements.data();
  kernels::parallel_chunks(q.rows * q.cols, [&](std::int64_t begin, std::int64_t end) {
    numerics::convert_array(codes + begin, q.element, static_cast<std::size_t>(end - begin),
                            bits + begin, Format::bfloat16);
  });
  return bits;
}

struct LinearQuantNode : Node, LinearNodeShape {
  QuantCopy x_col, w_col;  // x along its rows, W along its rows (the output features)
  std::shared_ptr<LinearQuant> quant;
  const char* name() const override { return "linear_quantized"; }  // as the probe's sites
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor gc = g.contiguous();
    const precision::MatmulRoute route = policy.matmul_route;
    const RoundingProbe lost(QuantRole::input_grad, name(), layer);
    Tensor dx, dw;
    QuantCopy g_row;
    const bool shared_g = one_copy(quant->recipe(), Fp8Slot::grad) && needs_grad(0);
    Tensor g_elements;  // the shared copy's fp8 codes as bfloat16, where converted once
    quant::BlockOperand g_op(static_cast<const std::uint16_t*>(nullptr), 0, 0);
    if (needs_grad(0)) {  // dx = g W: g along the output features, W along its rows
      g_row = quantize_copy(gc, rows, out, *quant, Fp8Slot::grad, Along::last, Use::once);
      g_op = g_row.operand();
      // One copy read by both products: its codes converted to bfloat16 once where the
      // products' route would copy them for each.
      if (shared_g && needs_grad(1) &&
          (quant::copies_elements_to_bf16(input_grad_product({rows, in, out}), g_op,
                                          w_col.operand(), route) ||
           quant::copies_elements_to_bf16(weight_grad_product({rows, in, out}), g_op,
                                          x_col.operand(), route))) {
        g_elements = Tensor::empty(Shape{rows, out}, Format::bfloat16);
        g_op.element_values = elements_as_bf16(*g_row.q, g_elements);
      }
      dx = Tensor::empty(Shape{rows, in}, grad_format(0));
      quant::block_scaled_gemm(input_grad_product({rows, in, out}), g_op, w_col.operand(),
                               write_rows(dx, 0, in, nullptr, lost.if_active()), route);
      dx = dx.reshape(x_shape);
    }
    if (needs_grad(1)) {  // dW = g^T x: both along the rows (the tokens)
      const QuantCopy g_col =
          shared_g ? g_row
                   : quantize_copy(gc, rows, out, *quant, Fp8Slot::grad, Along::rows, Use::once);
      if (!shared_g) g_op = g_col.operand();
      dw = Tensor::empty(Shape{out, in}, grad_format(1));
      const GemmShape s = g_col.transposed ? GemmShape::dense(out, in, g_col.cols(), false, true)
                                           : weight_grad_product({rows, in, out});
      quant::block_scaled_gemm(s, g_op, x_col.operand(),
                               write_rows(dw, 0, in, nullptr, lost.if_active()), route);
    }
    const Tensor db = has_bias && needs_grad(2) ? bias_gradient(gc, rows, out) : Tensor();
    return {dx, dw, db};
  }
};

}  // namespace

Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                const std::shared_ptr<LinearQuant>& quant) {
  const Policy& p = precision::current_policy();
  if (!quant || !p.fp8.enabled) return linear(x, weight, bias);
  if (quant->recipe().recipe == precision::Recipe::delayed) {
    return linear(x, weight, bias, quant->delayed());
  }
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  // Named variables, not a structured binding: the node's lambda captures them (clang 14,
  // which the fuzz build uses, cannot capture a structured binding).
  const LinearSizes sizes = linear_sizes(x, weight, bias);
  const std::int64_t rows = sizes.rows, in = sizes.in, out = sizes.out;
  const Tensor xc = x.value().contiguous();
  const WeightCopies& w = weight_copies(weight, *quant);
  // W's row-wise copy for this product: the kept one, or values made for it.
  const QuantCopy w_row = w.row.defined()
                              ? w.row
                              : quantize_copy(weight.value().contiguous(), out, in, *quant,
                                              Fp8Slot::weight, Along::last, Use::once);
  // x's copy for the weight gradient is kept; the forward's is read once, unless it is the
  // same copy (one scale per tensor).
  const bool one = one_copy(quant->recipe(), Fp8Slot::input);
  const bool keep_x = grad_enabled() && weight.requires_grad();
  const QuantCopy x_row = quantize_copy(xc, rows, in, *quant, Fp8Slot::input, Along::last,
                                        one && keep_x ? Use::kept : Use::once);
  Tensor y = Tensor::empty(linear_output_shape(xs, out), result_format(p));
  const Tensor b32 = bias.defined() ? to_format(bias.value(), Format::float32, false) : Tensor();
  const RoundingProbe lost(QuantRole::output, "linear_quantized");
  quant::block_scaled_gemm(
      GemmShape::dense(rows, out, in, false, true), x_row.operand(), w_row.operand(),
      write_rows(y, 0, out, bias.defined() ? b32.f32() : nullptr, lost.if_active()),
      p.matmul_route);
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(y), inputs, [&] {
    auto node = std::make_shared<LinearQuantNode>();
    // The weight gradient's copy of x, made only when the weight takes a gradient.
    if (keep_x) {
      node->x_col =
          one ? x_row : quantize_copy(xc, rows, in, *quant, Fp8Slot::input, Along::rows, Use::kept);
    }
    node->w_col = w.col;
    node->quant = quant;
    node->set_shape(sizes, xs, bias.defined());
    return node;
  });
}

}  // namespace mantissa::autograd
