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
// The same on bfloat16 bits (the same results: kernels/pointwise.hpp), or null.
using Forward16 = void (*)(const std::uint16_t*, std::uint16_t*, std::int64_t);
using Backward16 = void (*)(const std::uint16_t*, const std::uint16_t*, std::uint16_t*,
                            std::int64_t);

struct Activation {
  Forward forward;
  Backward backward;
  Forward16 forward16;
  Backward16 backward16;
  const char* label;
};

constexpr Activation kRelu{kernels::relu_forward, kernels::relu_backward, nullptr, nullptr, "relu"};
constexpr Activation kGelu{kernels::gelu_forward, kernels::gelu_backward,
                           kernels::gelu_forward_bf16, kernels::gelu_backward_bf16, "gelu"};

bool bf16(const Tensor& t) {
  return t.format() == Format::bfloat16 && t.is_contiguous();
}
const std::uint16_t* bits(const Tensor& t) {
  return static_cast<const std::uint16_t*>(t.raw_data());
}
std::uint16_t* bits(Tensor& t) {
  return static_cast<std::uint16_t*>(t.raw_data());
}

struct PointwiseNode : Node {
  Tensor x;  // the input, as stored
  const Activation* fn;
  const char* name() const override { return fn->label; }
  std::vector<Tensor> apply(const Tensor& g) override {
    if (fn->backward16 != nullptr && bf16(x) && bf16(g) && grad_format(0) == Format::bfloat16) {
      Tensor dx = Tensor::empty(x.shape(), Format::bfloat16);
      fn->backward16(bits(x), bits(g), bits(dx), x.numel());
      return {dx};
    }
    const Backward backward_fn = fn->backward;
    const Decoded xd(x, 0), gd(g, 1);
    return {
        produce(x.shape(), grad_format(0), 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
          backward_fn(xd.range(r0, r1 - r0), gd.range(r0, r1 - r0), out, r1 - r0);
        })};
  }
};

Variable pointwise(const Variable& x, const Activation& fn) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const Format format = result_format(precision::current_policy());
  Tensor y;
  if (fn.forward16 != nullptr && bf16(x.value()) && format == Format::bfloat16) {
    y = Tensor::empty(x.shape(), Format::bfloat16);
    fn.forward16(bits(x.value()), bits(y), x.value().numel());
  } else {
    const Decoded xd(x.value(), 0);
    // The activation and the rounding to H in one pass, tile by tile.
    y = produce(x.shape(), format, 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
      fn.forward(xd.range(r0, r1 - r0), out, r1 - r0);
    });
  }
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<PointwiseNode>();
    node->x = x.value();
    node->fn = &fn;
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
  return pointwise(x, kRelu);
}

Variable gelu(const Variable& x) {
  return pointwise(x, kGelu);
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
