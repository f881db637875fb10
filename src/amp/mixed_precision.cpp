#include "mantissa/amp/mixed_precision.hpp"

#include "mantissa/kernels/gemm_route.hpp"

#include "mantissa/error.hpp"

namespace mantissa::amp {
namespace {

bool scales(const LossScaling& s) {
  return !std::holds_alternative<NoLossScaling>(s);
}

// The scaler options the settings describe (loss scaling must be set).
GradScalerOptions scaler_options(const MixedPrecision& m) {
  GradScalerOptions o = GradScalerOptions::defaults_for(m.policy().half);
  const auto* fixed = std::get_if<StaticLossScaling>(&m.loss_scaling);
  o.dynamic = fixed == nullptr;
  o.static_scale = fixed != nullptr ? fixed->scale : 1.0;
  if (m.initial_loss_scale) o.init_scale = *m.initial_loss_scale;
  if (m.steps_per_increase) o.steps_per_increase = *m.steps_per_increase;
  if (m.min_loss_scale) o.min_loss_scale = *m.min_loss_scale;
  if (m.max_loss_scale) o.max_loss_scale = *m.max_loss_scale;
  o.max_gradient_norm = m.max_gradient_norm;
  o.overflow_tolerance = m.overflow_tolerance;
  o.growth_factor = m.growth_factor;
  o.backoff_factor = m.backoff_factor;
  o.on_stuck = m.on_stuck;
  o.hysteresis = m.hysteresis;
  o.consecutive_hysteresis = m.consecutive_hysteresis;
  o.on_nonfinite = m.on_nonfinite;
  o.max_consecutive_skips = m.max_consecutive_skipped_steps;
  return o;
}

}  // namespace

void MixedPrecision::validate() const {
  if (!precision::is_half_format(fp16_type)) {
    throw Error(precision::fp16_type_error(numerics::name(fp16_type)));
  }
  policy().validate();  // precision_opt_level
  if (max_gradient_norm && max_gradient_value) {
    throw Error("max_gradient_norm and max_gradient_value are mutually exclusive: set one");
  }
  if (max_gradient_norm && !(*max_gradient_norm > 0)) {
    throw Error("max_gradient_norm: " + std::to_string(*max_gradient_norm) + " must be > 0");
  }
  if (max_gradient_value && !(*max_gradient_value > 0)) {
    throw Error("max_gradient_value: " + std::to_string(*max_gradient_value) + " must be > 0");
  }
  if (enabled && fp16_type == Format::cbfloat16 &&
      !std::holds_alternative<DynamicLossScaling>(loss_scaling)) {
    throw Error(
        "loss_scaling_factor: cbfloat16 requires dynamic loss scaling (set "
        "loss_scaling_factor: dynamic)");
  }
  if (fp8.enabled) {
    if (!enabled) throw Error("fp8.enabled: true needs enabled: true (fp8 is a half policy)");
    fp8.validate();
  }
  if (master_weights != optim::MasterWeights::float32 &&
      (!enabled || fp16_type != Format::bfloat16)) {
    throw Error(
        "master_weights: " + std::string(name_of(optim::kMasterWeightsNames, master_weights)) +
        " needs enabled: true and fp16_type: bfloat16 (the weights are the bfloat16 "
        "values the products read)");
  }
  // A route this CPU cannot run is refused now, not at the first product.
  kernels::check_route(enabled ? fp16_type : Format::float32, matmul_route);
  if (std::holds_alternative<DynamicLossScaling>(loss_scaling) &&
      on_nonfinite != NonFinitePolicy::skip && enabled && fp16_type != Format::bfloat16) {
    throw Error("on_nonfinite: " + std::string(name_of(kNonFinitePolicyNames, on_nonfinite)) +
                " does not apply with loss_scaling_factor: dynamic, which skips every "
                "non-finite step and lowers the scale (on_stuck governs the floor)");
  }
  if (max_consecutive_skipped_steps < 1) {
    throw Error("max_consecutive_skipped_steps: " + std::to_string(max_consecutive_skipped_steps) +
                " must be >= 1");
  }
  // The scaler's own rules (static scale > 0, min scale >= 2^-14, ranges, tolerance, factors,
  // hysteresis).
  if (scales(loss_scaling)) scaler_options(*this).validate();
}

bool MixedPrecision::logs_loss_scale() const {
  return log_loss_scale.value_or(std::holds_alternative<DynamicLossScaling>(loss_scaling));
}

precision::Policy MixedPrecision::policy() const {
  precision::Fp8Settings f = fp8;
  f.enabled = enabled && fp8.enabled;
  return {enabled ? fp16_type : numerics::Format::float32, precision_opt_level, matmul_route, f};
}

std::unique_ptr<GradScaler> MixedPrecision::make_scaler(
    std::function<void(const std::string&)> log) const {
  validate();
  if (!enabled || !scales(loss_scaling)) return nullptr;
  if (fp16_type == Format::bfloat16) {
    if (log)
      log("bfloat16 has float32's range: loss scaling settings are ignored (no loss scaling)");
    return nullptr;
  }
  GradScalerOptions o = scaler_options(*this);
  o.log = std::move(log);
  return std::make_unique<GradScaler>(std::move(o));
}

std::unique_ptr<GradScaler> MixedPrecision::make_step_guard(
    std::function<void(const std::string&)> log) const {
  if (std::unique_ptr<GradScaler> s = make_scaler(log)) return s;
  GradScalerOptions o;
  o.dynamic = false;
  o.static_scale = 1.0;
  o.max_gradient_norm = max_gradient_norm;
  o.on_nonfinite = on_nonfinite;
  o.max_consecutive_skips = max_consecutive_skipped_steps;
  o.log = std::move(log);
  return std::make_unique<GradScaler>(std::move(o));
}

}  // namespace mantissa::amp
