#pragma once
// Variable: a tensor that takes part in reverse-mode differentiation. Leaves (parameters)
// accumulate float32 gradients; results of ops point at the Node that made them.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "mantissa/kernels/profiler.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/precision/quant_probe.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::autograd {

using numerics::Format;
using tensor::Shape;
using tensor::Tensor;

class Node;

struct VariableImpl {
  Tensor value;
  Tensor grad;  // float32, same shape; undefined until a backward reaches this leaf
  // zero_grad() was called and no gradient has arrived since: grad's storage holds stale
  // values that read as zeros (grad() writes the zeros when someone looks first; a backward's
  // first contribution is copied in rather than added to zeros).
  bool grad_zeroed = false;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::uint64_t version = 0;  // bumped whenever the value changes in place
  // The value converted to another format, made once per version (a weight's H copy,
  // stored packed in H's own width).
  Tensor half_copy;
  Format half_format = Format::float32;
  std::uint64_t half_version = ~std::uint64_t{0};
};

// Where a gradient goes from a node: the node that made the input, or the input itself when
// it is a leaf that wants a gradient. Nodes hold edges, not their inputs' values: a value
// lives on only if some node saved it for its backward.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<VariableImpl> leaf;
  bool defined() const { return fn != nullptr || leaf != nullptr; }
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor value, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  // PyTorch's loss.backward(): autograd::backward(*this).
  void backward() const;
  const Tensor& value() const { return impl().value; }
  // For in-place updates (optimizers): call bump_version() after changing the values.
  Tensor& mutable_value() { return impl().value; }
  void bump_version() { ++impl().version; }
  std::uint64_t version() const { return impl().version; }

  const Tensor& grad() const {
    settle_zeroed_grad();
    return impl().grad;
  }
  Tensor& mutable_grad() {
    settle_zeroed_grad();
    return impl().grad;
  }
  void zero_grad();  // zeros the gradient (keeps its storage; the zeros are written lazily)

  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  void set_grad_fn(std::shared_ptr<Node> fn);
  // The edge a node records for this input (undefined when no gradient flows to it).
  Edge edge() const;

  const Shape& shape() const { return impl().value.shape(); }
  Format format() const { return impl().value.format(); }

  // The value as a contiguous tensor of format `f`: the value itself when it is one already
  // (an op's result under a policy with H = f), else converted (nearest-even) once per version
  // and cached (a weight's H copy, made once per optimizer step).
  const Tensor& value_rounded_to(Format f) const;
  // Bytes of storage the cached copy holds (0 when there is none).
  std::int64_t cached_copy_bytes() const;
  // For an in-place updater that changes the values range by range (optimizers): whether a
  // cached copy of the current values is held (float32 contiguous values, a copy made for
  // this version), so that the updater can keep it current instead of letting the next
  // value_rounded_to() convert every value again; values [b, e) rounded into that copy (only
  // when holds_current_copy() said so before the change, 0 <= b <= e <= numel; ranges may be
  // rounded on different threads); and the version bump after the change, keeping the copy
  // as the new version's when `copy_refreshed` (every range was rounded into it).
  bool holds_current_copy() const;
  void refresh_copy_range(std::int64_t b, std::int64_t e);
  void bump_version(bool copy_refreshed);

  bool same(const Variable& other) const { return impl_ == other.impl_; }
  // What identifies this variable (shared by its copies): for maps from variables to indices.
  const void* id() const { return impl_.get(); }

 private:
  // Writes the zeros zero_grad() left to write, when no gradient has arrived since.
  void settle_zeroed_grad() const;
  // The variable's state; throws mantissa::Error for an undefined Variable (one made by
  // Variable()), whose accessors have nothing to read.
  VariableImpl& impl() const {
    if (!impl_) undefined();
    return *impl_;
  }
  [[noreturn]] static void undefined();
  std::shared_ptr<VariableImpl> impl_;
};

// Reverse-mode node: one per op application.
class Node {
 public:
  virtual ~Node() = default;
  // Gradients with respect to each input (undefined tensors where none), given the gradient
  // of the output. The gradient arrives in the policy's H (packed) when the op ran under a
  // half policy, else in float32; the results may be in any format (float32 or H).
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  virtual const char* name() const = 0;
  // What its backward is charged to in a profile.
  virtual kernels::OpClass op_class() const { return kernels::OpClass::pointwise; }

  // The format to make input i's gradient in. backward() sets it before apply(): the H the
  // node receiving that gradient rounds it to on arrival, when that node receives no other
  // gradient (so the one rounding happens while the gradient is made, with the same bits and
  // without a float32 copy); float32 otherwise, and for leaves. Ops may ignore it and return
  // float32: the receiver then rounds.
  Format grad_format(std::size_t input) const {
    return input < grad_formats.size() ? grad_formats[input] : Format::float32;
  }

  // Whether input i receives a gradient (PyTorch's needs_input_grad): ops make only those.
  bool needs_grad(std::size_t input) const { return input < next.size() && next[input].defined(); }

  std::vector<Edge> next;            // one per input, in the op's input order
  precision::Policy policy;          // in force when the op ran
  precision::LayerName layer;        // the layer the op ran in (precision::current_layer())
  bool released = false;             // its backward has run (a graph is back-propagated once)
  std::vector<Format> grad_formats;  // per input (grad_format); set by backward()
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
// consumer ran under (docs/design.md section 3). Each node is freed, with the tensors it saved,
// once its backward has run, so a graph is back-propagated once (as in PyTorch without
// retain_graph): a second backward through it throws mantissa::Error.
void backward(const Variable& root, float seed = 1.0f);

// Called during a backward once a leaf's gradient is final (every node that sends it a
// gradient has run), with the leaf's id() and its float32 gradient: data-parallel training
// starts reducing a parameter's gradient while the backward goes on. Called on the thread
// that runs the backward, in an order fixed by the graph.
using LeafReadyHook = std::function<void(const void* leaf_id, Tensor& grad)>;
void backward(const Variable& root, float seed, const LeafReadyHook& on_leaf_ready);

}  // namespace mantissa::autograd
