#include "mantissa/optim/clip.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "support/number_text.hpp"

namespace mantissa::optim {
namespace {

// fn(values, n) on p's gradient as float32: in place when it is float32; else on a decoded
// copy, stored back (nearest-even) when `write` (bfloat16 gradients of bfloat16 weights).
template <class Fn>
void on_float32_grad(autograd::Variable& p, bool write, Fn&& fn) {
  tensor::Tensor& g = p.mutable_grad();
  if (g.format() == numerics::Format::float32) {
    fn(g.f32(), g.numel());
    return;
  }
  tensor::Tensor copy = g.to(numerics::Format::float32);
  fn(copy.f32(), copy.numel());
  if (write) g.copy_from(copy);
}

}  // namespace

double grad_norm(const std::vector<autograd::Variable>& params) {
  double sum = 0;
  for (autograd::Variable p : params) {
    if (!p.grad().defined()) continue;
    on_float32_grad(p, false, [&](float* g, std::int64_t n) { sum += kernels::sum_squares(g, n); });
  }
  return std::sqrt(sum);
}

double clip_coefficient(double norm, double max_norm) {
  return std::min(max_norm / (norm + 1e-6), 1.0);
}

void scale_grads_(std::vector<autograd::Variable>& params, double coefficient) {
  const auto c = static_cast<float>(coefficient);
  for (autograd::Variable& p : params) {
    if (!p.grad().defined()) continue;
    on_float32_grad(p, true,
                    [&](float* g, std::int64_t n) { kernels::scale_and_sum_squares(g, n, c); });
  }
}

double clip_grad_norm_(std::vector<autograd::Variable>& params, double max_norm) {
  if (!(max_norm > 0)) {
    throw Error("max_gradient_norm: " + support::value_text(max_norm) + " must be > 0");
  }
  const double norm = grad_norm(params);
  if (!std::isfinite(norm)) return norm;
  const double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0) scale_grads_(params, coef);
  return norm;
}

void clip_grad_value_(std::vector<autograd::Variable>& params, double clip_value) {
  if (!(clip_value > 0)) {
    throw Error("max_gradient_value: " + support::value_text(clip_value) + " must be > 0");
  }
  const auto c = static_cast<float>(clip_value);
  for (autograd::Variable& p : params) {
    if (!p.grad().defined()) continue;
    on_float32_grad(p, true, [&](float* g, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) g[i] = std::clamp(g[i], -c, c);
    });
  }
}

}  // namespace mantissa::optim

namespace mantissa::optim {

double clip_grad_norm_(std::vector<autograd::Variable>&& params, double max_norm) {
  return clip_grad_norm_(params, max_norm);
}

void clip_grad_value_(std::vector<autograd::Variable>&& params, double clip_value) {
  clip_grad_value_(params, clip_value);
}

}  // namespace mantissa::optim
