#include "mantissa/optim/clip.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"

namespace mantissa::optim {

double grad_norm(const std::vector<autograd::Variable>& params) {
  double sum = 0;
  for (const autograd::Variable& p : params) {
    if (!p.grad().defined()) continue;
    sum += kernels::sum_squares(p.grad().f32(), p.grad().numel());
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
    kernels::scale_and_sum_squares(p.mutable_grad().f32(), p.grad().numel(), c);
  }
}

double clip_grad_norm_(std::vector<autograd::Variable>& params, double max_norm) {
  if (!(max_norm > 0)) {
    throw Error("max_gradient_norm: " + std::to_string(max_norm) + " must be > 0");
  }
  const double norm = grad_norm(params);
  if (!std::isfinite(norm)) return norm;
  const double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0) scale_grads_(params, coef);
  return norm;
}

void clip_grad_value_(std::vector<autograd::Variable>& params, double clip_value) {
  if (!(clip_value > 0)) {
    throw Error("max_gradient_value: " + std::to_string(clip_value) + " must be > 0");
  }
  const auto c = static_cast<float>(clip_value);
  for (autograd::Variable& p : params) {
    if (!p.grad().defined()) continue;
    float* g = p.mutable_grad().f32();
    for (std::int64_t i = 0; i < p.grad().numel(); ++i) g[i] = std::clamp(g[i], -c, c);
  }
}

}  // namespace mantissa::optim
