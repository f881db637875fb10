#include "run_settings.hpp"

#include <fmt/format.h>

#include "mantissa/kernels/gemm_route.hpp"
#include "number_text.hpp"

namespace mantissa::train::detail {

LossScalingMode loss_scaling_mode(const amp::GradScaler* scaler) {
  if (scaler == nullptr) return LossScalingMode::none;
  return scaler->options().dynamic ? LossScalingMode::dynamic : LossScalingMode::fixed;
}

std::vector<SettingRow> precision_settings(const amp::MixedPrecision& settings,
                                           const precision::Policy& policy,
                                           const amp::GradScaler* scaler) {
  std::vector<SettingRow> rows;
  rows.emplace_back("computes in", policy.describe());
  rows.emplace_back("matmul route",
                    kernels::describe_route(policy.half, policy.opt_level, policy.matmul_route));
  const LossScalingMode mode = loss_scaling_mode(scaler);
  if (mode == LossScalingMode::none) {
    const bool ignored = policy.half == numerics::Format::bfloat16 &&
                         !std::holds_alternative<amp::NoLossScaling>(settings.loss_scaling);
    rows.emplace_back(
        "loss scaling",
        ignored ? "none (bfloat16 has float32's range: the settings are ignored)" : "none");
  } else if (mode == LossScalingMode::fixed) {
    rows.emplace_back("loss scaling", "static, " + scale_text(scaler->options().static_scale));
  } else {
    const amp::GradScalerOptions& o = scaler->options();
    rows.emplace_back("loss scaling", "dynamic");
    rows.emplace_back("initial loss scale", scale_text(o.init_scale));
    rows.emplace_back("loss scale range",
                      scale_text(o.min_loss_scale) + " to " + scale_text(o.max_loss_scale));
    rows.emplace_back("growth", fmt::format("x{:g} after {} steps without overflow",
                                            o.growth_factor, o.steps_per_increase));
    rows.emplace_back("backoff", fmt::format("x{:g} on overflow", o.backoff_factor));
    rows.emplace_back("overflow tolerance", fmt::format("{:g}", o.overflow_tolerance));
    rows.emplace_back("hysteresis",
                      o.hysteresis == 1
                          ? std::string("1 (off)")
                          : fmt::format("{} (refilled {})", o.hysteresis,
                                        o.consecutive_hysteresis ? "on every finite step"
                                                                 : "when the scale grows"));
    rows.emplace_back("when stuck at the minimum",
                      std::string(name_of(amp::kStuckPolicyNames, o.on_stuck)));
  }
  if (settings.max_gradient_norm) {
    rows.emplace_back("gradient clipping",
                      fmt::format("global norm {:g}", *settings.max_gradient_norm));
  } else if (settings.max_gradient_value) {
    rows.emplace_back("gradient clipping", fmt::format("value {:g}", *settings.max_gradient_value));
  } else {
    rows.emplace_back("gradient clipping", "none");
  }
  return rows;
}

}  // namespace mantissa::train::detail
