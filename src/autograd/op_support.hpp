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

// Stores a float32 result in the activation format of the policy.
inline Tensor store(const Tensor& y32, const Policy& p) {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  return y32.to(precision::activation_format(p));
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

[[noreturn]] void shape_error(const char* op, const std::string& what);

}  // namespace mantissa::autograd::detail
