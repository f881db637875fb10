// relu, gelu, dropout.
#include <cstdint>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/pointwise.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

using Forward = void (*)(const float*, float*, std::int64_t);
using Backward = void (*)(const float*, const float*, float*, std::int64_t);

struct PointwiseNode : Node {
  Tensor x;  // the input, as stored
  Backward backward_fn;
  const char* label;
  const char* name() const override { return label; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Decoded xd(x, 0), gd(g, 1);
    return {
        produce(x.shape(), grad_format(0), 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
          backward_fn(xd.range(r0, r1 - r0), gd.range(r0, r1 - r0), out, r1 - r0);
        })};
  }
};

Variable pointwise(const Variable& x, Forward forward, Backward backward, const char* label) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const Decoded xd(x.value(), 0);
  // The activation and the rounding to H in one pass, tile by tile.
  Tensor y = produce(x.shape(), result_format(precision::current_policy()), 1,
                     [&](std::int64_t r0, std::int64_t r1, float* out) {
                       forward(xd.range(r0, r1 - r0), out, r1 - r0);
                     });
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<PointwiseNode>();
    node->x = x.value();
    node->backward_fn = backward;
    node->label = label;
    return node;
  });
}

struct DropoutNode : Node {
  std::vector<std::uint8_t> kept;  // 1 where the element was kept
  float keep_scale;
  const char* name() const override { return "dropout"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Decoded gd(g, 0);
    return {
        produce(g.shape(), grad_format(0), 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
          const float* gp = gd.range(r0, r1 - r0);
          for (std::int64_t i = 0; i < r1 - r0; ++i) {
            out[i] = gp[i] * (kept[static_cast<std::size_t>(r0 + i)] ? keep_scale : 0.0f);
          }
        })};
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
  if (!(p >= 0.0f && p < 1.0f)) {
    throw Error("dropout: probability " + std::to_string(p) + " is outside [0, 1)");
  }
  if (!training || p == 0.0f) return x;
  const float keep_scale = 1.0f / (1.0f - p);
  std::vector<std::uint8_t> kept(static_cast<std::size_t>(x.value().numel()));
  // One draw per element, in order; a block, so that data-parallel processes draw their parts
  // of the mask one process would draw for the whole batch (Rng::begin_block).
  rng.begin_block(x.value().numel());
  for (std::uint8_t& k : kept) k = rng.uniform() < p ? 0 : 1;
  rng.end_block(x.value().numel());
  const Decoded xd(x.value(), 0);
  Tensor y = produce(x.shape(), result_format(precision::current_policy()), 1,
                     [&](std::int64_t r0, std::int64_t r1, float* out) {
                       const float* xp = xd.range(r0, r1 - r0);
                       for (std::int64_t i = 0; i < r1 - r0; ++i) {
                         out[i] =
                             xp[i] * (kept[static_cast<std::size_t>(r0 + i)] ? keep_scale : 0.0f);
                       }
                     });
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<DropoutNode>();
    node->kept = std::move(kept);
    node->keep_scale = keep_scale;
    return node;
  });
}

}  // namespace mantissa::autograd
