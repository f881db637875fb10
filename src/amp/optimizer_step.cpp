#include "mantissa/amp/optimizer_step.hpp"

#include "mantissa/error.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/optim/clip.hpp"

namespace mantissa::amp {

StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler* scaler,
                          std::optional<double> max_gradient_norm,
                          std::optional<double> max_gradient_value) {
  autograd::backward(scaler != nullptr ? scaler->scale(loss) : loss);
  return finish_step(optimizer, scaler, max_gradient_norm, max_gradient_value);
}

StepReport finish_step(optim::Optimizer& optimizer, GradScaler* scaler,
                       std::optional<double> max_gradient_norm,
                       std::optional<double> max_gradient_value) {
  if (max_gradient_norm && max_gradient_value) {
    throw Error("max_gradient_norm and max_gradient_value are mutually exclusive: set one");
  }
  kernels::PhaseScope phase(kernels::Phase::step);
  kernels::ProfileScope scope(kernels::OpClass::optimizer);
  StepReport r;
  if (scaler == nullptr) {
    std::vector<Variable> params = optimizer.parameters();
    r.grad_norm = max_gradient_norm ? optim::clip_grad_norm_(params, *max_gradient_norm)
                                    : optim::grad_norm(params);
    if (max_gradient_value) optim::clip_grad_value_(params, *max_gradient_value);
    optimizer.step();
    r.stepped = true;
  } else {
    r.loss_scale = scaler->get_scale();
    scaler->unscale_(optimizer);
    if (max_gradient_norm) scaler->clip_grad_norm_(optimizer, *max_gradient_norm);
    if (max_gradient_value && scaler->last_step_finite()) {
      std::vector<Variable> params = optimizer.parameters();
      optim::clip_grad_value_(params, *max_gradient_value);
    }
    r.grad_norm = scaler->last_grad_norm();
    r.nonfinite_params = scaler->last_nonfinite_params();
    r.stepped = scaler->step_if_finite(optimizer);
    scaler->update();
    r.skipped_steps = scaler->num_skipped_steps();
  }
  optimizer.zero_grad();
  return r;
}

}  // namespace mantissa::amp
