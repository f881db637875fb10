#include "mantissa/amp/mixed_precision.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "mantissa/error.hpp"

namespace mantissa::amp {
namespace {

// The static scale of a numeric loss_scaling_factor, or nullopt for "dynamic".
std::optional<double> static_scale_of(const std::string& text) {
  if (text == "dynamic") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0) || !std::isfinite(v)) {
    throw Error("loss_scaling_factor: '" + text +
                "' is neither \"dynamic\" nor a finite number > 0");
  }
  return v;
}

StuckPolicy stuck_policy(const std::string& s) {
  if (s == "raise") return StuckPolicy::raise;
  if (s == "keep_going") return StuckPolicy::keep_going;
  if (s == "fall_back") return StuckPolicy::fall_back;
  throw Error("on_stuck: '" + s + "' (expected one of: raise, keep_going, fall_back)");
}

// The scaler options the settings describe (loss_scaling_factor must be set).
GradScalerOptions scaler_options(const MixedPrecision& m) {
  const std::optional<double> fixed = static_scale_of(*m.loss_scaling_factor);
  GradScalerOptions o = GradScalerOptions::defaults_for(m.policy().half);
  o.dynamic = !fixed;
  o.static_scale = fixed.value_or(1.0);
  if (m.initial_loss_scale) o.init_scale = *m.initial_loss_scale;
  if (m.steps_per_increase) o.steps_per_increase = *m.steps_per_increase;
  if (m.min_loss_scale) o.min_loss_scale = *m.min_loss_scale;
  if (m.max_loss_scale) o.max_loss_scale = *m.max_loss_scale;
  o.max_gradient_norm = m.max_gradient_norm;
  o.overflow_tolerance = m.overflow_tolerance;
  o.on_stuck = stuck_policy(m.on_stuck);
  o.hysteresis = m.hysteresis;
  o.grow_only_if_finite = m.grow_only_if_finite;
  return o;
}

}  // namespace

void MixedPrecision::validate() const {
  if (fp16_type != "float16" && fp16_type != "bfloat16" && fp16_type != "cbfloat16") {
    throw Error("fp16_type: '" + fp16_type + "' (expected one of: float16, bfloat16, cbfloat16)");
  }
  if (precision_opt_level < 0 || precision_opt_level > 2) {
    throw Error("precision_opt_level: " + std::to_string(precision_opt_level) +
                " (expected one of: 0, 1, 2)");
  }
  if (max_gradient_norm && max_gradient_value) {
    throw Error("max_gradient_norm and max_gradient_value are mutually exclusive: set one");
  }
  if (max_gradient_norm && !(*max_gradient_norm > 0)) {
    throw Error("max_gradient_norm: " + std::to_string(*max_gradient_norm) + " must be > 0");
  }
  if (max_gradient_value && !(*max_gradient_value > 0)) {
    throw Error("max_gradient_value: " + std::to_string(*max_gradient_value) + " must be > 0");
  }
  const std::optional<double> fixed =
      loss_scaling_factor ? static_scale_of(*loss_scaling_factor) : std::nullopt;
  if (enabled && fp16_type == "cbfloat16" && (!loss_scaling_factor || fixed)) {
    throw Error(
        "loss_scaling_factor: cbfloat16 requires dynamic loss scaling (set "
        "loss_scaling_factor: dynamic)");
  }
  stuck_policy(on_stuck);
  // The scaler's own rules (min scale >= 2^-14, ranges, tolerance, hysteresis).
  if (loss_scaling_factor) scaler_options(*this).validate();
}

precision::Policy MixedPrecision::policy() const {
  if (!enabled) return {numerics::Format::float32, precision_opt_level};
  return {numerics::parse_format_or_throw(fp16_type, "fp16_type"), precision_opt_level};
}

std::unique_ptr<GradScaler> MixedPrecision::make_scaler(
    std::function<void(const std::string&)> log) const {
  validate();
  if (!enabled || !loss_scaling_factor) return nullptr;
  if (fp16_type == "bfloat16") {
    const std::string line =
        "bfloat16 has float32's range: loss scaling settings are ignored (no scaler)";
    if (log) {
      log(line);
    } else {
      std::fprintf(stderr, "mantissa: %s\n", line.c_str());
    }
    return nullptr;
  }
  GradScalerOptions o = scaler_options(*this);
  o.log = std::move(log);
  return std::make_unique<GradScaler>(std::move(o));
}

}  // namespace mantissa::amp
