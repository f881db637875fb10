#pragma once
// Internal helpers shared by the op implementations.
#include <memory>
#include <string>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::autograd::detail {

using precision::Policy;

// The values as a contiguous float32 tensor (no copy when already one).
inline Tensor f32(const Tensor& t) {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  return t.to(Format::float32);
}

// A fresh float32 result buffer.
inline Tensor new_f32(const Shape& shape) {
  return Tensor::empty(shape, Format::float32);
}

// Rounds float32 values to `f` in place (nearest-even; no-op for float32), on all threads.
void round_in_place(float* x, std::int64_t n, Format f);

// An op's float32 result holding values of `held` (make_result marks the Variable, so the
// next op's value_rounded_to(held) is free).
struct Stored {
  Tensor value;
  Format held = Format::float32;
};

// Activations live in H between ops (DESIGN.md section 3): the result is rounded to the
// policy's H in place. The container stays float32: every kernel on this CPU reads float32,
// so a packed 16-bit copy would only add an encode here and a decode at each consumer.
inline Stored store(Tensor y32, const Policy& p) {
  const Format f = precision::activation_format(p);
  round_in_place(y32.f32(), y32.numel(), f);
  return {std::move(y32), f};
}

// float32 values rounded to `f`, as a tensor the caller may keep (a copy when rounding).
Tensor rounded(const Tensor& t, Format f);

// The GEMM precision a matmul-class op uses under `p`.
inline kernels::GemmPrecision gemm_precision(const Policy& p) {
  return {p.half, precision::matmul_passes(p.half, p.opt_level), kernels::GemmAlgorithm::automatic};
}

bool any_requires_grad(const std::vector<Variable>& inputs);

// Wraps `value` as the result of an op: when gradients are on and an input needs one, the
// node made by `make` records the inputs and the policy.
template <class MakeNode>
Variable make_result(Tensor value, std::vector<Variable> inputs, MakeNode&& make) {
  Variable out(std::move(value));
  if (grad_enabled() && any_requires_grad(inputs)) {
    std::shared_ptr<Node> node = make();
    node->inputs = std::move(inputs);
    node->policy = precision::current_policy();
    out.set_grad_fn(std::move(node));
  }
  return out;
}

template <class MakeNode>
Variable make_result(Stored value, std::vector<Variable> inputs, MakeNode&& make) {
  Variable out = make_result(std::move(value.value), std::move(inputs), make);
  if (value.held != Format::float32) out.mark_rounded_to(value.held);
  return out;
}

[[noreturn]] void shape_error(const char* op, const std::string& what);

}  // namespace mantissa::autograd::detail
