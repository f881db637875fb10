// relu, gelu, dropout.
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/pointwise.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

using Backward = void (*)(const float*, const float*, float*, std::int64_t);

struct PointwiseNode : Node {
  Tensor x;
  Backward backward_fn;
  const char* label;
  const char* name() const override { return label; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor x32 = f32(x);
    Tensor dx = new_f32(x.shape());
    backward_fn(x32.f32(), g.f32(), dx.f32(), dx.numel());
    return {dx};
  }
};

Variable pointwise(const Variable& x, void (*forward)(const float*, float*, std::int64_t),
                   Backward backward, const char* label) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const Tensor x32 = f32(x.value());
  Tensor y = new_f32(x.shape());
  const float* xp = x32.f32();
  float* yp = y.f32();
  // The activation and the rounding to H in one pass, tile by tile.
  Stored stored =
      fill_and_store(y, precision::current_policy(), y.numel(), 1,
                     [&](std::int64_t b, std::int64_t e) { forward(xp + b, yp + b, e - b); });
  return make_result(std::move(stored), {x}, [&] {
    auto node = std::make_shared<PointwiseNode>();
    node->x = x.value();
    node->backward_fn = backward;
    node->label = label;
    return node;
  });
}

struct DropoutNode : Node {
  Tensor mask;  // float32: 0 or 1/(1-p)
  const char* name() const override { return "dropout"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = new_f32(g.shape());
    const float *gp = g.f32(), *mp = mask.f32();
    float* d = dx.f32();
    for (std::int64_t i = 0; i < dx.numel(); ++i) d[i] = gp[i] * mp[i];
    return {dx};
  }
};

}  // namespace

Variable relu(const Variable& x) {
  return pointwise(x, kernels::relu_forward, kernels::relu_backward, "relu");
}

Variable gelu(const Variable& x) {
  return pointwise(x, kernels::gelu_forward, kernels::gelu_backward, "gelu");
}

Variable dropout(const Variable& x, float p, bool training, tensor::Rng& rng) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  if (p < 0.0f || p >= 1.0f) {
    throw Error("dropout: probability " + std::to_string(p) + " is outside [0, 1)");
  }
  if (!training || p == 0.0f) return x;
  const Tensor x32 = f32(x.value());
  Tensor mask = new_f32(x.shape()), y = new_f32(x.shape());
  const float keep_scale = 1.0f / (1.0f - p);
  float *m = mask.f32(), *yp = y.f32();
  const float* xp = x32.f32();
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    m[i] = rng.uniform() < p ? 0.0f : keep_scale;
    yp[i] = xp[i] * m[i];
  }
  return make_result(store(y, precision::current_policy()), {x}, [&] {
    auto node = std::make_shared<DropoutNode>();
    node->mask = mask;
    return node;
  });
}

}  // namespace mantissa::autograd
