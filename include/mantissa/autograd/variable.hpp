#pragma once
// Variable: a tensor that takes part in reverse-mode differentiation. Leaves (parameters)
// accumulate float32 gradients; results of ops point at the Node that made them.
#include <cstdint>
#include <memory>
#include <vector>

#include "mantissa/kernels/profiler.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::autograd {

using numerics::Format;
using tensor::Shape;
using tensor::Tensor;

class Node;

struct VariableImpl {
  Tensor value;
  Tensor grad;  // float32, same shape; undefined until a backward reaches this leaf
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::uint64_t version = 0;  // bumped whenever the value changes in place
  // The value rounded to a half format, made once per version (a weight's H copy).
  Tensor half_copy;
  Format half_format = Format::float32;
  std::uint64_t half_version = ~std::uint64_t{0};
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor value, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& value() const { return impl_->value; }
  // For in-place updates (optimizers): call bump_version() after changing the values.
  Tensor& mutable_value() { return impl_->value; }
  void bump_version() { ++impl_->version; }
  std::uint64_t version() const { return impl_->version; }

  const Tensor& grad() const { return impl_->grad; }
  Tensor& mutable_grad() { return impl_->grad; }
  void zero_grad();  // zeros the gradient in place (keeps its storage)

  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return impl_->grad_fn; }
  void set_grad_fn(std::shared_ptr<Node> fn);

  const Shape& shape() const { return impl_->value.shape(); }
  Format format() const { return impl_->value.format(); }

  // The value as float32 holding values of `f` (rounded once per version and cached; the
  // value itself when it is float32 already holding such values).
  const Tensor& value_rounded_to(Format f) const;
  // Records that the (contiguous float32) value already holds values of `f`, so
  // value_rounded_to(f) returns it without a copy. Ops mark their results this way.
  void mark_rounded_to(Format f);
  // The narrowest format the value is known to hold (float32 when nothing is known).
  Format held_format() const;

  bool same(const Variable& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<VariableImpl> impl_;
};

// Reverse-mode node: one per op application.
class Node {
 public:
  virtual ~Node() = default;
  // Gradients with respect to each input (undefined tensors where none), given the gradient
  // of the output as float32.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  virtual const char* name() const = 0;
  // What its backward is charged to in a profile.
  virtual kernels::OpClass op_class() const { return kernels::OpClass::pointwise; }

  std::vector<Variable> inputs;
  precision::Policy policy;  // in force when the op ran
};

// Gradients off for its lifetime on this thread (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();

// Back-propagates from a one-element `root`, seeding its gradient with `seed` (1 by
// default), in iterative topological order. Leaf gradients accumulate in float32;
// gradients flowing between ops are rounded to the half format of the policy their
// consumer ran under (DESIGN.md section 3).
void backward(const Variable& root, float seed = 1.0f);

}  // namespace mantissa::autograd
