#pragma once
// A small perceptron whose parameters are the same on every rank and whose data depends on
// (rank, step): what one rank of a data-parallel job computes, and, run for every rank in one
// process, the reference the reduced gradients are checked against.
#include <cstdint>
#include <vector>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::testing {

using autograd::Variable;
using tensor::Tensor;

class TinyNet {
 public:
  TinyNet() {
    // w1 [64, 30], b1 [64], w2 [40, 64], b2 [40]: 1,920 + 64 + 2,560 + 40 elements, which
    // an 8 KiB cap (2,048 elements) puts in buckets {w1, b1}, {w2}, {b2}.
    for (const tensor::Shape& s :
         {tensor::Shape{64, 30}, tensor::Shape{64}, tensor::Shape{40, 64}, tensor::Shape{40}}) {
      Tensor t = Tensor::empty(s);
      tensor::Rng(static_cast<std::uint64_t>(params_.size()) + 1).fill_normal(t, 0.0f, 0.3f);
      params_.emplace_back(t, true);
    }
  }
  const std::vector<Variable>& params() const { return params_; }

  // The mean cross-entropy of rank `rank`'s batch of step `step`.
  Variable loss(int rank, int step) const {
    tensor::Rng rng(1000u * static_cast<std::uint64_t>(step) + static_cast<std::uint64_t>(rank));
    Tensor x = Tensor::empty({6, 30});
    rng.fill_normal(x, 0.0f, 1.0f);
    std::vector<std::int32_t> targets(6);
    for (auto& t : targets) t = static_cast<std::int32_t>(rng.next_u64() % 40);
    const Variable h = autograd::relu(autograd::linear(Variable(x), params_[0], params_[1]));
    return autograd::cross_entropy(autograd::linear(h, params_[2], params_[3]), targets);
  }

  void clear_grads() {
    for (Variable& p : params_) p.mutable_grad() = Tensor();
  }
  // Each parameter's gradient of loss(rank, step), by a plain backward.
  std::vector<std::vector<float>> local_grads(int rank, int step) {
    clear_grads();
    autograd::backward(loss(rank, step));
    std::vector<std::vector<float>> g;
    for (const Variable& p : params_) g.push_back(p.grad().to_vector());
    clear_grads();
    return g;
  }

 private:
  std::vector<Variable> params_;
};

}  // namespace mantissa::testing
