// Fused causal multi-head self-attention.
#include <cmath>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/attention.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

kernels::AttentionPrecision attention_precision(const Policy& p) {
  return {p.half, precision::attention_softmax_in_half(p)};
}

struct AttentionNode : Node {
  Tensor q, k, v, o, lse;  // float32 (q, k, v hold H values)
  std::int64_t bh, t, d;
  float scale;
  const char* name() const override { return "causal_attention"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dq = new_f32(q.shape()), dk = new_f32(k.shape()), dv = new_f32(v.shape());
    kernels::attention_backward(q.f32(), k.f32(), v.f32(), o.f32(), lse.f32(), g.f32(), dq.f32(),
                                dk.f32(), dv.f32(), bh, t, d, scale, attention_precision(policy));
    return {dq, dk, dv};
  }
};

}  // namespace

Variable causal_attention(const Variable& q, const Variable& k, const Variable& v) {
  const Shape& s = q.shape();
  if (s.size() != 4 || !(k.shape() == s) || !(v.shape() == s)) {
    shape_error("causal_attention", "q " + s.to_string() + ", k " + k.shape().to_string() + ", v " +
                                        v.shape().to_string() +
                                        " (expected three equal shapes [b, heads, t, d])");
  }
  const std::int64_t bh = s[0] * s[1], t = s[2], d = s[3];
  const Policy& p = precision::current_policy();
  const Tensor q32 = rounded(q.value(), p.half), k32 = rounded(k.value(), p.half),
               v32 = rounded(v.value(), p.half);
  Tensor o = new_f32(s), lse = new_f32(Shape{bh, t});
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  kernels::attention_forward(q32.f32(), k32.f32(), v32.f32(), o.f32(), lse.f32(), bh, t, d, scale,
                             attention_precision(p));
  return make_result(store(o, p), {q, k, v}, [&] {
    auto node = std::make_shared<AttentionNode>();
    node->q = q32;
    node->k = k32;
    node->v = v32;
    node->o = o;
    node->lse = lse;
    node->bh = bh;
    node->t = t;
    node->d = d;
    node->scale = scale;
    return node;
  });
}

}  // namespace mantissa::autograd
