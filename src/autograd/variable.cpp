#include "mantissa/autograd/variable.hpp"

#include <cstring>
#include <unordered_map>

#include "kernels/parallel.hpp"
#include "mantissa/error.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
thread_local bool t_grad_enabled = true;

void accumulate(Tensor& into, Tensor g) {
  kernels::ProfileScope scope(kernels::OpClass::grad_accum);
  // into += g, both float32 with the same shape; `into` is created on first use, taking
  // over g's storage when nothing else holds it (the usual case: a fresh op gradient).
  Tensor g32 = g.to(Format::float32);
  g = Tensor();
  if (!into.defined()) {
    into = g32.owns_storage_alone() ? std::move(g32) : g32.clone();
    return;
  }
  float* a = into.f32();
  const float* b = g32.f32();
  kernels::parallel_chunks(into.numel(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) a[i] += b[i];
  });
}
}  // namespace

Variable::Variable(Tensor value, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
}

void Variable::zero_grad() {
  if (impl_->grad.defined()) std::memset(impl_->grad.raw_data(), 0, impl_->grad.numel() * 4);
}

void Variable::set_grad_fn(std::shared_ptr<Node> fn) {
  impl_->grad_fn = std::move(fn);
  impl_->requires_grad = impl_->grad_fn != nullptr || impl_->requires_grad;
}

const Tensor& Variable::value_rounded_to(Format f) const {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  VariableImpl& v = *impl_;
  if (v.half_format != f || v.half_version != v.version || !v.half_copy.defined()) {
    if (f == Format::float32 && v.value.format() == Format::float32 && v.value.is_contiguous()) {
      v.half_copy = v.value;  // nothing to round
      v.half_format = f;
      v.half_version = v.version;
      return v.half_copy;
    }
    Tensor rounded;
    if (v.value.format() == Format::float32 && v.value.is_contiguous()) {
      // A weight's H copy: copy and round chunk by chunk while the chunk is in cache.
      rounded = Tensor::empty(v.value.shape(), Format::float32);
      const float* src = v.value.f32();
      float* dst = rounded.f32();
      kernels::parallel_chunks(rounded.numel(), [&](std::int64_t begin, std::int64_t end) {
        std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin) * 4);
        numerics::round_to_format(dst + begin, static_cast<std::size_t>(end - begin), f);
      });
    } else {
      rounded = v.value.to(Format::float32);
      if (rounded.shares_storage(v.value)) rounded = rounded.clone();
      if (f != Format::float32) detail::round_in_place(rounded.f32(), rounded.numel(), f);
    }
    v.half_copy = rounded;
    v.half_format = f;
    v.half_version = v.version;
  }
  return v.half_copy;
}

void Variable::mark_rounded_to(Format f) {
  VariableImpl& v = *impl_;
  if (v.value.format() != Format::float32 || !v.value.is_contiguous()) return;
  v.half_copy = v.value;
  v.half_format = f;
  v.half_version = v.version;
}

Format Variable::held_format() const {
  const VariableImpl& v = *impl_;
  if (v.value.format() != Format::float32) return v.value.format();
  const bool marked = v.half_copy.defined() && v.half_version == v.version &&
                      v.half_copy.shares_storage(v.value) &&
                      v.half_copy.offset() == v.value.offset();
  return marked ? v.half_format : Format::float32;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) {
  t_grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
  t_grad_enabled = previous_;
}
bool grad_enabled() {
  return t_grad_enabled;
}

void backward(const Variable& root, float seed) {
  if (!root.defined() || root.value().numel() != 1) {
    throw Error("backward: the root must be a one-element tensor (got shape " +
                (root.defined() ? root.shape().to_string() : std::string("undefined")) + ")");
  }
  if (!root.requires_grad()) {
    throw Error("backward: the root does not require gradients (no parameter reaches it)");
  }
  kernels::PhaseScope phase(kernels::Phase::backward);
  const Tensor seed_tensor = Tensor::full(root.shape(), seed);
  if (root.is_leaf()) {
    Variable r = root;
    accumulate(r.mutable_grad(), seed_tensor);
    return;
  }
  // Count, for every node, how many edges from other nodes of the graph lead to it.
  std::unordered_map<Node*, int> consumers;
  std::vector<Node*> stack{root.grad_fn().get()};
  consumers[root.grad_fn().get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Variable& in : n->inputs) {
      if (!in.defined() || !in.grad_fn()) continue;
      Node* m = in.grad_fn().get();
      auto [it, fresh] = consumers.emplace(m, 0);
      ++it->second;
      if (fresh) stack.push_back(m);
    }
  }
  // Run nodes whose consumers have all delivered their gradients (Kahn's algorithm).
  std::unordered_map<Node*, Tensor> pending;
  pending[root.grad_fn().get()] = seed_tensor;
  std::vector<Node*> ready{root.grad_fn().get()};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    auto found = pending.find(n);
    Tensor g;
    if (found != pending.end()) {
      g = std::move(found->second);  // exclusively ours: made by accumulate() or the seed
      pending.erase(found);
    }
    std::vector<Tensor> grads;
    if (g.defined()) {
      kernels::ProfileScope scope(n->op_class());
      if (n->policy.enabled()) {
        detail::round_in_place(g.f32(), g.numel(), n->policy.half);
      }
      grads = n->apply(g);
      g = Tensor();  // so an input gradient that is g itself can be taken over, not copied
    }
    for (std::size_t i = 0; i < n->inputs.size(); ++i) {
      Variable in = n->inputs[i];
      if (!in.defined() || !in.requires_grad()) continue;
      const bool has = i < grads.size() && grads[i].defined();
      if (in.grad_fn()) {
        Node* m = in.grad_fn().get();
        if (has) accumulate(pending[m], std::move(grads[i]));
        if (--consumers[m] == 0) ready.push_back(m);  // runs even if nothing arrived
      } else if (has) {
        accumulate(in.mutable_grad(), std::move(grads[i]));
      }
    }
  }
}

}  // namespace mantissa::autograd
