// layer_norm, softmax, log_softmax, cross_entropy: fp32 reductions over the last dimension.
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/rows.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

struct LayerNormNode : Node {
  Tensor x, gamma, mean, rstd;
  std::int64_t rows, cols;
  const char* name() const override { return "layer_norm"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::norm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor x32 = f32(x), g32 = f32(gamma);
    Tensor dx = new_f32(x.shape());
    Tensor dgamma = Tensor::zeros(Shape{cols}), dbeta = Tensor::zeros(Shape{cols});
    kernels::layer_norm_backward(x32.f32(), g32.f32(), mean.f32(), rstd.f32(), g.f32(), dx.f32(),
                                 dgamma.f32(), dbeta.f32(), rows, cols);
    return {dx, dgamma, dbeta};
  }
};

struct SoftmaxNode : Node {
  Tensor y;  // float32 output (probabilities or log-probabilities)
  bool log;
  std::int64_t rows, cols;
  const char* name() const override { return log ? "log_softmax" : "softmax"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::softmax_loss; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = new_f32(y.shape());
    if (log) {
      kernels::log_softmax_backward(y.f32(), g.f32(), dx.f32(), rows, cols);
    } else {
      kernels::softmax_backward(y.f32(), g.f32(), dx.f32(), rows, cols);
    }
    return {dx};
  }
};

struct CrossEntropyNode : Node {
  Tensor logits, lse;
  std::vector<std::int32_t> targets;
  std::int32_t ignore_index;
  std::int64_t rows, cols, counted;
  const char* name() const override { return "cross_entropy"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::softmax_loss; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor l32 = f32(logits);
    Tensor d = new_f32(logits.shape());
    const float s = counted > 0 ? g.item() / static_cast<float>(counted) : 0.0f;
    kernels::cross_entropy_backward(l32.f32(), lse.f32(), targets.data(), rows, cols, ignore_index,
                                    s, d.f32());
    return {d};
  }
};

Variable softmax_impl(const Variable& x, bool log) {
  kernels::ProfileScope scope(kernels::OpClass::softmax_loss);
  if (x.shape().empty()) shape_error(log ? "log_softmax" : "softmax", "a scalar has no last dim");
  const std::int64_t cols = x.shape().back(),
                     rows = x.value().numel() / std::max<std::int64_t>(cols, 1);
  const Tensor x32 = f32(x.value());
  Tensor y = new_f32(x.shape());
  if (log) {
    kernels::log_softmax_forward(x32.f32(), y.f32(), rows, cols);
  } else {
    kernels::softmax_forward(x32.f32(), y.f32(), rows, cols);
  }
  const Policy& p = precision::current_policy();
  // The node keeps the float32 probabilities; the result is rounded to H.
  return make_result(store(p.enabled() ? y.clone() : y, p), {x}, [&] {
    auto node = std::make_shared<SoftmaxNode>();
    node->y = y;
    node->log = log;
    node->rows = rows;
    node->cols = cols;
    return node;
  });
}

}  // namespace

Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta, float eps) {
  kernels::ProfileScope scope(kernels::OpClass::norm);
  const std::int64_t cols = x.shape().empty() ? 0 : x.shape().back();
  if (!(gamma.shape() == Shape{cols}) || !(beta.shape() == Shape{cols})) {
    shape_error("layer_norm", "input " + x.shape().to_string() + " with gamma " +
                                  gamma.shape().to_string() + " and beta " +
                                  beta.shape().to_string() + " (expected [" + std::to_string(cols) +
                                  "])");
  }
  const std::int64_t rows = x.value().numel() / cols;
  const Tensor x32 = f32(x.value()), g32 = f32(gamma.value()), b32 = f32(beta.value());
  Tensor y = new_f32(x.shape()), mu = new_f32(Shape{rows}), rs = new_f32(Shape{rows});
  kernels::layer_norm_forward(x32.f32(), g32.f32(), b32.f32(), y.f32(), mu.f32(), rs.f32(), rows,
                              cols, eps);
  return make_result(store(y, precision::current_policy()), {x, gamma, beta}, [&] {
    auto node = std::make_shared<LayerNormNode>();
    node->x = x.value();
    node->gamma = gamma.value();
    node->mean = mu;
    node->rstd = rs;
    node->rows = rows;
    node->cols = cols;
    return node;
  });
}

Variable softmax(const Variable& x) {
  return softmax_impl(x, false);
}
Variable log_softmax(const Variable& x) {
  return softmax_impl(x, true);
}

Variable cross_entropy(const Variable& logits, const std::vector<std::int32_t>& targets,
                       std::int32_t ignore_index) {
  kernels::ProfileScope scope(kernels::OpClass::softmax_loss);
  const Shape& s = logits.shape();
  if (s.size() != 2 || s[0] != static_cast<std::int64_t>(targets.size())) {
    shape_error("cross_entropy", "logits " + s.to_string() + " with " +
                                     std::to_string(targets.size()) +
                                     " targets (expected logits [n, classes] and n targets)");
  }
  const std::int64_t rows = s[0], cols = s[1];
  const Tensor l32 = f32(logits.value());
  Tensor per_row = new_f32(Shape{rows}), lse = new_f32(Shape{rows});
  const std::int64_t counted = kernels::cross_entropy_forward(
      l32.f32(), targets.data(), rows, cols, ignore_index, per_row.f32(), lse.f32());
  double total = 0;
  for (std::int64_t r = 0; r < rows; ++r) total += per_row.f32()[r];
  const float loss = counted > 0 ? static_cast<float>(total / static_cast<double>(counted)) : 0.0f;
  return make_result(Tensor::scalar(loss), {logits}, [&] {
    auto node = std::make_shared<CrossEntropyNode>();
    node->logits = logits.value();
    node->lse = lse;
    node->targets = targets;
    node->ignore_index = ignore_index;
    node->rows = rows;
    node->cols = cols;
    node->counted = counted;
    return node;
  });
}

}  // namespace mantissa::autograd
