#include "mantissa/autograd/variable.hpp"

#include <cstring>
#include <unordered_map>

#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/numerics/convert.hpp"
#include "op_support.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd {
namespace {
thread_local bool t_grad_enabled = true;

// A gradient flowing into a node: the first one is taken as it comes (any format); a second
// one makes the sum in float32, so the consumer rounds the exact float32 sum to its H once.
void accumulate_pending(Tensor& into, Tensor g) {
  kernels::ProfileScope scope(kernels::OpClass::grad_accum);
  if (!into.defined()) {
    into = std::move(g);
    return;
  }
  if (into.format() != Format::float32 || !into.owns_storage_alone() || !into.is_contiguous()) {
    into = detail::sum_as_float32(into, g);  // one pass: decode both, add, store
    return;
  }
  detail::add_into(into, g);
}

// A float32 leaf's gradient, owned by the leaf (optimizers update it in place): contributions
// are added into it in float32.
void accumulate_leaf(VariableImpl& leaf, Tensor g) {
  kernels::ProfileScope scope(kernels::OpClass::grad_accum);
  Tensor& into = leaf.grad;
  if (leaf.grad_zeroed) {  // the first contribution since zero_grad(): no zeros to add to
    leaf.grad_zeroed = false;
    detail::assign_into(into, g);
    return;
  }
  if (!into.defined()) {
    const bool take = g.format() == Format::float32 && g.is_contiguous() && g.owns_storage_alone();
    into = take ? std::move(g) : detail::to_format(g, Format::float32, /*fresh=*/true);
    return;
  }
  detail::add_into(into, g);
}

// A bfloat16 leaf (low-precision training state, optim/training_state.hpp) keeps a bfloat16
// gradient: a backward's contributions are summed in float32 (`sum`), then added to it and
// rounded once, when the last one has arrived.
void finish_bfloat16_leaf(VariableImpl& leaf, Tensor sum) {
  kernels::ProfileScope scope(kernels::OpClass::grad_accum);
  if (leaf.grad.defined() && !leaf.grad_zeroed) detail::add_into(sum, leaf.grad);
  leaf.grad_zeroed = false;
  leaf.grad = detail::to_format(sum, Format::bfloat16, /*fresh=*/true);
}

bool bfloat16_leaf(const VariableImpl& leaf) {
  return leaf.value.format() == Format::bfloat16;
}

bool holds_nonfinite(const Tensor& t, NonfiniteWatch& watch) {
  const Tensor c = t.contiguous();
  watch.count_read(c.numel() * c.element_bytes());
  return kernels::any_nonfinite(c.raw_data(), c.format(), c.numel());
}

thread_local NonfiniteWatch* t_watch = nullptr;

// A watched backward: whether the gradients node n made for other nodes hold inf or NaN
// (gradients for leaves are the optimizer step's to check). A gradient passed on as it came
// (`received`: add, reshape) was checked when it was made.
bool made_nonfinite(const Node& n, const std::vector<Tensor>& grads, const void* received,
                    NonfiniteWatch& watch) {
  for (std::size_t i = 0; i < grads.size() && i < n.next.size(); ++i) {
    const Tensor& g = grads[i];
    if (n.next[i].fn == nullptr || !g.defined() || g.raw_data() == received) continue;
    if (holds_nonfinite(g, watch)) return true;
  }
  return false;
}

NonfiniteOrigin origin_of(const Node& n, NonfiniteGradient which) {
  return {n.name(), n.layer ? *n.layer : std::string(), which};
}

}  // namespace

std::string describe(const NonfiniteOrigin& o) {
  const std::string where = o.layer.empty() ? " at the model's top level" : " in " + o.layer;
  return o.gradient == NonfiniteGradient::input_grad
             ? "the backward of " + o.op + where
             : "the output gradient of " + o.op + where + ", rounded to the half format";
}

NonfiniteWatch::NonfiniteWatch() : previous_(t_watch) {
  t_watch = this;
}
NonfiniteWatch::~NonfiniteWatch() {
  t_watch = previous_;
}
NonfiniteWatch* NonfiniteWatch::active() {
  return t_watch;
}
void NonfiniteWatch::found(NonfiniteOrigin origin) {
  if (!first_) first_ = std::move(origin);
}

void Variable::undefined() {
  throw Error("autograd: the variable is undefined (made by Variable(), it holds no value)");
}

Variable::Variable(Tensor value, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
}

void Variable::zero_grad() {
  if (impl().grad.defined()) impl_->grad_zeroed = true;
}

void Variable::settle_zeroed_grad() const {
  if (!impl_ || !impl_->grad_zeroed) return;
  impl_->grad_zeroed = false;
  Tensor& g = impl_->grad;
  std::memset(g.raw_data(), 0, static_cast<std::size_t>(g.numel()) * g.element_bytes());
}

void Variable::set_grad_fn(std::shared_ptr<Node> fn) {
  impl().grad_fn = std::move(fn);
  impl_->requires_grad = impl_->grad_fn != nullptr || impl_->requires_grad;
}

Edge Variable::edge() const {
  if (!defined() || !impl_->requires_grad) return {};
  if (impl_->grad_fn) return {impl_->grad_fn, nullptr};
  return {nullptr, impl_};
}

const Tensor& Variable::value_rounded_to(Format f) const {
  VariableImpl& v = impl();
  if (v.value.format() == f && v.value.is_contiguous()) return v.value;
  if (v.half_format != f || v.half_version != v.version || !v.half_copy.defined()) {
    kernels::ProfileScope scope(kernels::OpClass::convert);
    v.half_copy = Tensor();  // the old copy's storage goes back to the pool first
    v.half_copy = detail::to_format(v.value, f, /*fresh=*/true);
    v.half_format = f;
    v.half_version = v.version;
  }
  return v.half_copy;
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

void Variable::backward() const {
  autograd::backward(*this);
}

void backward(const Variable& root, float seed) {
  backward(root, seed, LeafReadyHook());
}

void backward(const Variable& root, float seed, const LeafReadyHook& on_leaf_ready) {
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
    VariableImpl& leaf = *r.edge().leaf;
    if (bfloat16_leaf(leaf)) {
      finish_bfloat16_leaf(leaf, seed_tensor.clone());
    } else {
      accumulate_leaf(leaf, seed_tensor.clone());
    }
    if (on_leaf_ready) on_leaf_ready(r.id(), r.mutable_grad());
    return;
  }
  // Count, for every node, how many edges from other nodes of the graph lead to it.
  const std::shared_ptr<Node>& top = root.grad_fn();
  if (top->released) {
    throw Error(
        "backward: this graph was already back-propagated and its saved tensors freed; "
        "run the forward again for another backward");
  }
  std::unordered_map<Node*, int> consumers;
  std::unordered_map<VariableImpl*, int> leaf_senders;  // nodes that send each leaf a gradient
  std::unordered_map<VariableImpl*, Tensor> leaf_sums;  // bfloat16 leaves: float32 sums
  std::vector<Node*> stack{top.get()};
  consumers[top.get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf) ++leaf_senders[e.leaf.get()];
      if (!e.fn) continue;
      auto [it, fresh] = consumers.emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }
  // A gradient its receiver rounds to H on arrival can be made in H by its only sender.
  const std::unordered_map<Node*, int> senders = consumers;
  const auto set_grad_formats = [&senders](Node& n) {
    n.grad_formats.assign(n.next.size(), Format::float32);
    for (std::size_t i = 0; i < n.next.size(); ++i) {
      const Node* to = n.next[i].fn.get();
      if (to != nullptr && to->policy.enabled() && senders.at(n.next[i].fn.get()) == 1) {
        n.grad_formats[i] = to->policy.half;
      }
    }
  };
  // Run nodes whose consumers have all delivered their gradients (Kahn's algorithm). A node
  // that has run lets go of its edges: the nodes after it are then held only by this loop (or
  // by consumers still to run), and each is destroyed, with the tensors it saved, as soon as
  // it has run. Activation memory shrinks as the backward proceeds.
  NonfiniteWatch* const watch = NonfiniteWatch::active();
  std::unordered_map<Node*, Tensor> pending;
  pending[top.get()] = seed_tensor;
  std::vector<std::shared_ptr<Node>> ready{top};
  while (!ready.empty()) {
    const std::shared_ptr<Node> n = std::move(ready.back());
    ready.pop_back();
    auto found = pending.find(n.get());
    Tensor g;
    if (found != pending.end()) {
      g = std::move(found->second);
      pending.erase(found);
    }
    std::vector<Tensor> grads;
    if (g.defined()) {
      kernels::ProfileScope scope(n->op_class());
      // The node's backward runs in the layer its forward ran in (the probe's sites, a
      // recipe's quantization points read it).
      const precision::LayerScope in_layer(n->layer);
      const bool watching = watch != nullptr && !watch->first();
      // The gradient of an op's output is rounded to the H it ran under, and kept packed.
      if (n->policy.enabled() && g.format() != n->policy.half) {
        kernels::ProfileScope convert(kernels::OpClass::convert);
        const detail::RoundingProbe lost(precision::QuantRole::grad, n->name(), n->layer);
        const Tensor before = lost.active() ? g : Tensor();
        g = detail::to_format(g, n->policy.half, /*fresh=*/false);
        if (lost.active()) lost.rounded(before, g);
        // The gradients that were summed into g were found finite: the sum or its rounding
        // overflowed.
        if (watching && holds_nonfinite(g, *watch)) {
          watch->found(origin_of(*n, NonfiniteGradient::output_grad));
        }
      }
      set_grad_formats(*n);
      const void* received = g.raw_data();
      grads = n->apply(g);
      g = Tensor();  // so an input gradient that is g itself can be taken over, not copied
      if (watching && !watch->first() && made_nonfinite(*n, grads, received, *watch)) {
        watch->found(origin_of(*n, NonfiniteGradient::input_grad));
      }
    }
    const std::vector<Edge> next = std::move(n->next);
    n->next.clear();
    n->released = true;
    for (std::size_t i = 0; i < next.size(); ++i) {
      const Edge& e = next[i];
      const bool has = i < grads.size() && grads[i].defined();
      if (e.fn) {
        if (has) accumulate_pending(pending[e.fn.get()], std::move(grads[i]));
        if (--consumers[e.fn.get()] == 0) ready.push_back(e.fn);  // runs even if nothing arrived
      } else if (e.leaf) {
        VariableImpl& leaf = *e.leaf;
        const bool last = --leaf_senders[&leaf] == 0;
        if (bfloat16_leaf(leaf)) {
          if (has) accumulate_pending(leaf_sums[&leaf], std::move(grads[i]));
          if (last && leaf_sums[&leaf].defined()) {
            Tensor sum = std::move(leaf_sums[&leaf]);
            if (sum.format() != Format::float32 || !sum.owns_storage_alone()) {
              sum = detail::to_format(sum, Format::float32, /*fresh=*/true);
            }
            finish_bfloat16_leaf(leaf, std::move(sum));
          }
        } else if (has) {
          accumulate_leaf(leaf, std::move(grads[i]));
        }
        if (last && on_leaf_ready && e.leaf->grad.defined()) {
          on_leaf_ready(e.leaf.get(), e.leaf->grad);
        }
      }
    }
  }
}

bool Variable::holds_current_copy() const {
  const VariableImpl& v = impl();
  return v.half_copy.defined() && v.half_version == v.version && v.value.is_contiguous() &&
         v.half_copy.is_contiguous() && v.half_copy.numel() == v.value.numel() &&
         v.value.format() == Format::float32;
}

void Variable::refresh_copy_range(std::int64_t b, std::int64_t e) {
  VariableImpl& v = impl();
  // The conversion value_rounded_to's copy was made by (detail::to_format).
  numerics::convert_array(
      v.value.f32() + b, Format::float32, static_cast<std::size_t>(e - b),
      static_cast<char*>(v.half_copy.raw_data()) + b * v.half_copy.element_bytes(), v.half_format);
}

void Variable::bump_version(bool copy_refreshed) {
  VariableImpl& v = impl();
  const bool kept = copy_refreshed && v.half_copy.defined() && v.half_version == v.version;
  ++v.version;
  if (kept) v.half_version = v.version;
}

std::int64_t Variable::cached_copy_bytes() const {
  const Tensor& c = impl().half_copy;
  return c.defined() ? c.numel() * c.element_bytes() : 0;
}

}  // namespace mantissa::autograd
