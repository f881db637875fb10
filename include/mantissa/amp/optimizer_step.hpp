#pragma once
// optimizer_step: the seeds' one-call mixed-precision step.
#include <optional>
#include <string>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"

namespace mantissa::amp {

struct StepReport {
  bool stepped = false;            // false: skipped for non-finite gradients
  double grad_norm = 0;            // unscaled, before clipping
  double loss_scale = 1;           // the scale this step used
  std::int64_t skipped_steps = 0;  // total so far
  std::vector<std::string> nonfinite_params;
};

// Scaled backward of `loss`, unscale (one pass: 1/S, norms, finite check), the finite
// decision on the unclipped norm, clipping (max_gradient_norm or max_gradient_value, at most
// one), step_if_finite, update, zero_grad. Without a scaler (bfloat16, or mixed precision
// off) the same sequence runs at scale 1 and every step is taken.
// Everything after the backward: unscale, finite check, clip, step_if_finite, update,
// zero_grad (for gradient accumulation, where several scaled backwards come first).
StepReport finish_step(optim::Optimizer& optimizer, GradScaler* scaler,
                       std::optional<double> max_gradient_norm = std::nullopt,
                       std::optional<double> max_gradient_value = std::nullopt);

StepReport optimizer_step(const Variable& loss, optim::Optimizer& optimizer, GradScaler* scaler,
                          std::optional<double> max_gradient_norm = std::nullopt,
                          std::optional<double> max_gradient_value = std::nullopt);

}  // namespace mantissa::amp
