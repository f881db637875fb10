#include "mantissa/amp/optimizer_step.hpp"

#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/optim/clip.hpp"

namespace mantissa::amp {
namespace {

// The parameters of `optimizers`; with a scaler, only of those whose gradients are finite
// (gradients that will not be applied are left as they are: no silent change).
std::vector<Variable> parameters_of(const std::vector<optim::Optimizer*>& optimizers,
                                    const GradScaler* scaler) {
  std::vector<Variable> out;
  for (const optim::Optimizer* o : optimizers) {
    if (scaler != nullptr && !scaler->gradients_finite(*o)) continue;
    const std::vector<Variable> ps = o->parameters();
    out.insert(out.end(), ps.begin(), ps.end());
  }
  return out;
}

// At least one optimizer, none null, none listed twice (its step would be taken twice).
void check_optimizers(const std::vector<optim::Optimizer*>& optimizers) {
  if (optimizers.empty()) throw Error("optimizer_step: no optimizer given");
  for (std::size_t i = 0; i < optimizers.size(); ++i) {
    if (optimizers[i] == nullptr) {
      throw Error("optimizer_step: optimizer " + std::to_string(i) + " of the list is null");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (optimizers[j] == optimizers[i]) {
        throw Error("optimizer_step: one optimizer is listed twice (positions " +
                    std::to_string(j) + " and " + std::to_string(i) + ")");
      }
    }
  }
}

}  // namespace

StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler* scaler,
                          std::optional<double> max_gradient_norm,
                          std::optional<double> max_gradient_value) {
  return optimizer_step(loss, std::vector<optim::Optimizer*>{&optimizer}, scaler, max_gradient_norm,
                        max_gradient_value);
}

StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler& scaler,
                          std::optional<double> max_gradient_norm,
                          std::optional<double> max_gradient_value) {
  return optimizer_step(loss, optimizer, &scaler, max_gradient_norm, max_gradient_value);
}

StepReport optimizer_step(const Variable& loss, const std::vector<optim::Optimizer*>& optimizers,
                          GradScaler* scaler, std::optional<double> max_gradient_norm,
                          std::optional<double> max_gradient_value) {
  check_optimizers(optimizers);
  const autograd::NonfiniteWatch watch;
  autograd::backward(scaler != nullptr ? scaler->scale(loss) : loss);
  return finish_step(optimizers, scaler, max_gradient_norm, max_gradient_value);
}

StepReport finish_step(optim::Optimizer& optimizer, GradScaler* scaler,
                       std::optional<double> max_gradient_norm,
                       std::optional<double> max_gradient_value, const StepAgreement& agree) {
  return finish_step(std::vector<optim::Optimizer*>{&optimizer}, scaler, max_gradient_norm,
                     max_gradient_value, agree);
}

StepReport finish_step(const std::vector<optim::Optimizer*>& optimizers, GradScaler* scaler,
                       std::optional<double> max_gradient_norm,
                       std::optional<double> max_gradient_value, const StepAgreement& agree) {
  if (max_gradient_norm && max_gradient_value) {
    throw Error("max_gradient_norm and max_gradient_value are mutually exclusive: set one");
  }
  check_optimizers(optimizers);
  kernels::PhaseScope phase(kernels::Phase::step);
  kernels::ProfileScope scope(kernels::OpClass::optimizer);
  StepReport r;
  if (scaler == nullptr) {
    std::vector<Variable> params = parameters_of(optimizers, nullptr);
    if (agree) {
      const double local = optim::grad_norm(params);
      r.grad_norm = std::sqrt(agree({std::isfinite(local), local * local}).sum_squares);
      if (max_gradient_norm && std::isfinite(r.grad_norm)) {
        const double coef = optim::clip_coefficient(r.grad_norm, *max_gradient_norm);
        if (coef < 1.0) optim::scale_grads_(params, coef);
      }
    } else {
      r.grad_norm = max_gradient_norm ? optim::clip_grad_norm_(params, *max_gradient_norm)
                                      : optim::grad_norm(params);
    }
    if (max_gradient_value) optim::clip_grad_value_(params, *max_gradient_value);
    r.stepped = true;
    for (optim::Optimizer* o : optimizers) {
      if (o->step()) continue;
      r.stepped = false;
      if (r.refused_update.empty()) r.refused_update = o->refused_tensor();
    }
  } else {
    r.loss_scale = scaler->get_scale();
    for (optim::Optimizer* o : optimizers) scaler->unscale_(*o);
    if (agree) scaler->agree(agree);
    if (max_gradient_norm) scaler->clip_grad_norm_(*max_gradient_norm);
    if (max_gradient_value) {
      std::vector<Variable> params = parameters_of(optimizers, scaler);
      optim::clip_grad_value_(params, *max_gradient_value);
    }
    r.grad_norm = scaler->last_grad_norm();
    r.nonfinite_params = scaler->last_nonfinite_params();
    r.stepped = true;
    for (optim::Optimizer* o : optimizers) r.stepped = scaler->step_if_finite(*o) && r.stepped;
    r.refused_update = scaler->refused_update();
    scaler->update();
    r.skipped_steps = scaler->num_skipped_steps();
  }
  const autograd::NonfiniteWatch* watch = autograd::NonfiniteWatch::active();
  if (!r.stepped && r.refused_update.empty() && watch != nullptr) {
    r.nonfinite_origin = watch->first();
  }
  for (optim::Optimizer* o : optimizers) o->zero_grad();
  return r;
}

}  // namespace mantissa::amp
