#pragma once
// optimizer_step: the vendor's one-call mixed-precision step, for one optimizer or several.
#include <optional>
#include <string>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/autograd/nonfinite_watch.hpp"

namespace mantissa::amp {

struct StepReport {
  bool stepped = false;            // false: some optimizer skipped its step (non-finite)
  double grad_norm = 0;            // global, unscaled, before clipping
  double loss_scale = 1;           // the scale this step used
  std::int64_t skipped_steps = 0;  // total so far (the scaler's num_skipped_steps)
  std::vector<std::string> nonfinite_params;
  // A step skipped for non-finite gradients: the first op, in backward order, whose backward
  // made a non-finite gradient, when a NonfiniteWatch watched the backward (optimizer_step
  // keeps one; finish_step reads the caller's) and found one.
  std::optional<autograd::NonfiniteOrigin> nonfinite_origin = std::nullopt;
  // Set when the gradients were finite but the update would have made this weight or state
  // tensor non-finite: the step was not applied (Optimizer::step).
  std::string refused_update;
};

// The vendor's signature: optimizer_step(loss, optimizer, grad_scaler, max_gradient_norm). The
// backward runs under a NonfiniteWatch (StepReport::nonfinite_origin).
StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler& scaler,
                          std::optional<double> max_gradient_norm = std::nullopt,
                          std::optional<double> max_gradient_value = std::nullopt);

// Scaled backward of `loss`, then finish_step (scaler nullptr: no scaling).
StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler* scaler,
                          std::optional<double> max_gradient_norm = std::nullopt,
                          std::optional<double> max_gradient_value = std::nullopt);
StepReport optimizer_step(const Variable& loss, const std::vector<optim::Optimizer*>& optimizers,
                          GradScaler* scaler,
                          std::optional<double> max_gradient_norm = std::nullopt,
                          std::optional<double> max_gradient_value = std::nullopt);

// Everything after the backward (for gradient accumulation, where several scaled backwards
// come first): unscale_ every optimizer (one pass: 1/S, norms, finite check), clip
// (max_gradient_norm: all optimizers' gradients by their global norm; max_gradient_value:
// each element; at most one of the two, each > 0), step_if_finite each optimizer (each
// decides on its own gradients, as PyTorch's), one update(), zero_grad. Without a scaler
// (bfloat16, or mixed precision off) the same sequence runs at scale 1 and every step is
// taken. Data parallel: `agree` (when set) turns this process's facts after unscale_ into the
// job's before clipping and stepping (GradScaler::agree); without a scaler the job's norm is
// the one clipping uses. An update whose result would be non-finite is never applied
// (StepReport::refused_update names the tensor; stepped is false). A step skipped for
// non-finite gradients takes its nonfinite_origin from the NonfiniteWatch alive on this thread
// (the caller's, around its backwards), if any.
StepReport finish_step(optim::Optimizer& optimizer, GradScaler* scaler,
                       std::optional<double> max_gradient_norm = std::nullopt,
                       std::optional<double> max_gradient_value = std::nullopt,
                       const StepAgreement& agree = {});
StepReport finish_step(const std::vector<optim::Optimizer*>& optimizers, GradScaler* scaler,
                       std::optional<double> max_gradient_norm = std::nullopt,
                       std::optional<double> max_gradient_value = std::nullopt,
                       const StepAgreement& agree = {});

}  // namespace mantissa::amp
