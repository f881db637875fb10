// Fused causal multi-head self-attention.
#include <cmath>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/attention.hpp"
#include "op_support.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::AttentionShape;
using kernels::HeadLayout;
using precision::QuantRole;

constexpr const char* kOp = "causal_attention";

kernels::AttentionPrecision attention_precision(const Policy& p) {
  return {p.half, precision::attention_softmax_in_half(p), gemm_precision(p)};
}

// Where q, k and v start inside their tensors (one tensor for the fused form), in H.
struct Operands {
  Tensor q, k, v;  // the same tensor three times when fused
  std::int64_t k_offset = 0, v_offset = 0;
};

struct AttentionNode : Node {
  Operands in;
  Tensor o, lse;  // the output as stored (H), the row log-sum-exp (float32)
  AttentionShape shape;
  HeadLayout in_layout, out_layout;
  bool fused = false;
  float scale = 1;
  const char* name() const override { return kOp; }
  kernels::OpClass op_class() const override { return kernels::OpClass::attention; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::AttentionPrecision pr = attention_precision(policy);
    const Tensor gc = g.contiguous();
    // The gradients are made in the format each receiver rounds them to on arrival (as the
    // other ops make theirs), except on a sampled step: there they stay float32, so the
    // receivers' arrival measures what rounding them loses.
    const bool sampled = RoundingProbe(QuantRole::grad, name(), layer).active();
    const auto format = [&](std::size_t i) { return sampled ? Format::float32 : grad_format(i); };
    if (fused) {
      Tensor d = Tensor::empty(in.q.shape(), format(0));
      char* base = static_cast<char*>(d.raw_data());
      const std::int64_t bytes = d.element_bytes();
      kernels::attention_backward(
          shape, in_layout, operand(in.q), operand(in.k, in.k_offset), operand(in.v, in.v_offset),
          out_layout, operand(o), operand(gc), lse.f32(),
          {base, base + in.k_offset * bytes, base + in.v_offset * bytes, d.format()}, scale, pr);
      return {d};
    }
    // One format for the three (the kernel writes them alike): H where all three receivers
    // round to the same H, else float32.
    const Format f = format(0) == format(1) && format(1) == format(2) ? format(0) : Format::float32;
    Tensor dq = Tensor::empty(in.q.shape(), f), dk = Tensor::empty(in.k.shape(), f),
           dv = Tensor::empty(in.v.shape(), f);
    kernels::attention_backward(shape, in_layout, operand(in.q), operand(in.k), operand(in.v),
                                out_layout, operand(o), operand(gc), lse.f32(),
                                {dq.raw_data(), dk.raw_data(), dv.raw_data(), f}, scale, pr);
    return {dq, dk, dv};
  }
};

Variable attend(const std::vector<Variable>& inputs, Operands in, const AttentionShape& s,
                const HeadLayout& in_layout, const HeadLayout& out_layout, const Shape& out_shape,
                bool fused) {
  const Policy& p = precision::current_policy();
  Tensor o = Tensor::empty(out_shape, result_format(p));
  Tensor lse = Tensor::empty(Shape{s.batch * s.heads, s.t});
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  kernels::attention_forward(s, in_layout, operand(in.q), operand(in.k, in.k_offset),
                             operand(in.v, in.v_offset), out_layout, {o.raw_data(), o.format()},
                             lse.f32(), scale, attention_precision(p));
  // On a sampled step: what rounding the output to H lost, against the same attention with a
  // float32 output (the products and sums as above, only the last rounding left out).
  const RoundingProbe lost(QuantRole::output, kOp);
  if (lost.active() && o.format() != Format::float32) {
    Tensor o32 = Tensor::empty(out_shape);
    Tensor lse32 = Tensor::empty(lse.shape());
    kernels::attention_forward(
        s, in_layout, operand(in.q), operand(in.k, in.k_offset), operand(in.v, in.v_offset),
        out_layout, {o32.raw_data(), Format::float32}, lse32.f32(), scale, attention_precision(p));
    lost.rounded(o32, o);
  }
  const Tensor saved_o = o;
  return make_result(std::move(o), inputs, [&] {
    auto node = std::make_shared<AttentionNode>();
    node->in = std::move(in);
    node->o = saved_o;
    node->lse = lse;
    node->shape = s;
    node->in_layout = in_layout;
    node->out_layout = out_layout;
    node->fused = fused;
    node->scale = scale;
    return node;
  });
}

}  // namespace

Variable causal_attention(const Variable& q, const Variable& k, const Variable& v) {
  kernels::ProfileScope scope(kernels::OpClass::attention);
  const Shape& s = q.shape();
  if (s.size() != 4 || !(k.shape() == s) || !(v.shape() == s)) {
    shape_error("causal_attention", "q " + s.to_string() + ", k " + k.shape().to_string() + ", v " +
                                        v.shape().to_string() +
                                        " (expected three equal shapes [b, heads, t, d])");
  }
  const Policy& p = precision::current_policy();
  Operands in{q.value_rounded_to(p.half), k.value_rounded_to(p.half), v.value_rounded_to(p.half)};
  const RoundingProbe rounded(QuantRole::input, kOp);
  rounded.rounded(q.value(), in.q);
  rounded.rounded(k.value(), in.k);
  rounded.rounded(v.value(), in.v);
  const AttentionShape shape{s[0], s[1], s[2], s[3]};
  const HeadLayout dense = HeadLayout::dense(shape);
  return attend({q, k, v}, std::move(in), shape, dense, dense, s, false);
}

Variable causal_self_attention(const Variable& qkv, std::int64_t heads) {
  kernels::ProfileScope scope(kernels::OpClass::attention);
  const Shape& s = qkv.shape();
  if (s.size() != 3 || s[2] % 3 != 0 || heads < 1 || (s[2] / 3) % heads != 0) {
    shape_error("causal_self_attention",
                "qkv " + s.to_string() + " with " + std::to_string(heads) +
                    " heads (expected [b, t, 3c] with c divisible by the number of heads)");
  }
  const std::int64_t c = s[2] / 3;
  const AttentionShape shape{s[0], heads, s[1], c / heads};
  const Tensor x = qkv.value_rounded_to(precision::current_policy().half);
  RoundingProbe(QuantRole::input, kOp).rounded(qkv.value(), x);
  Operands in{x, x, x, c, 2 * c};
  return attend({qkv}, std::move(in), shape, HeadLayout::interleaved(shape, 3 * c),
                HeadLayout::interleaved(shape, c), Shape{s[0], s[1], c}, true);
}

}  // namespace mantissa::autograd
