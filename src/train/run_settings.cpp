#include "run_settings.hpp"

#include <fmt/format.h>

#include "mantissa/kernels/gemm_route.hpp"
#include "support/number_text.hpp"

namespace mantissa::train::detail {
namespace {

std::string yes_no(bool b) {
  return b ? "true" : "false";
}

// The route products of `half` take under the configured matmul_route ("automatic (the
// fastest of ...)" or the named route), and what POL does to float16 / cbfloat16 operands.
std::string route_text(const precision::Policy& policy) {
  std::string route = kernels::describe_route(policy.half, policy.opt_level, policy.matmul_route);
  const std::string prefix = std::string(numerics::name(policy.half)) + ": ";
  if (route.rfind(prefix, 0) == 0) route.erase(0, prefix.size());
  return route;
}

// loss_scaling_factor as configured: "dynamic" or the static scale.
std::string factor_text(const amp::LossScaling& scaling) {
  if (const auto* s = std::get_if<amp::StaticLossScaling>(&scaling))
    return support::scale_text(s->scale);
  return "dynamic";
}

void dynamic_rows(const amp::GradScalerOptions& o, std::vector<report::SettingRow>& rows) {
  std::string initial = support::scale_text(o.init_scale);
  if (o.init_scale > o.max_loss_scale) {
    initial += ", above max_loss_scale: starts at " + support::scale_text(o.max_loss_scale);
  }
  rows.emplace_back("initial_loss_scale", initial);
  rows.emplace_back("min_loss_scale", support::scale_text(o.min_loss_scale));
  rows.emplace_back("max_loss_scale", support::scale_text(o.max_loss_scale));
  rows.emplace_back("steps_per_increase", std::to_string(o.steps_per_increase));
  rows.emplace_back("growth_factor", fmt::format("{:g}", o.growth_factor));
  rows.emplace_back("backoff_factor", fmt::format("{:g}", o.backoff_factor));
  rows.emplace_back("overflow_tolerance", fmt::format("{:g}", o.overflow_tolerance));
  rows.emplace_back("hysteresis",
                    o.hysteresis == 1 ? std::string("1 (off)") : std::to_string(o.hysteresis));
  rows.emplace_back("consecutive_hysteresis", yes_no(o.consecutive_hysteresis));
  rows.emplace_back("on_stuck", std::string(name_of(amp::kStuckPolicyNames, o.on_stuck)));
}

}  // namespace

report::LossScalingMode loss_scaling_mode(const amp::GradScaler* scaler) {
  if (scaler == nullptr) return report::LossScalingMode::none;
  return scaler->options().dynamic ? report::LossScalingMode::dynamic
                                   : report::LossScalingMode::fixed;
}

std::vector<report::SettingRow> precision_settings(const amp::MixedPrecision& settings,
                                                   const precision::Policy& policy,
                                                   const amp::GradScaler* scaler) {
  std::vector<report::SettingRow> rows;
  rows.emplace_back("enabled", settings.enabled ? "true" : "false: float32 throughout");
  if (settings.enabled) {
    rows.emplace_back("fp16_type", std::string(numerics::name(settings.fp16_type)));
    rows.emplace_back("precision_opt_level", std::to_string(settings.precision_opt_level));
  }
  rows.emplace_back("matmul_route", route_text(policy));
  if (policy.fp8.enabled) {  // shown where they are on (the report's rows stay short otherwise)
    const precision::Fp8Settings& f = policy.fp8;
    rows.emplace_back("fp8",
                      fmt::format("on: recipe {}, history_length {}, amax_compute {}, margin {}",
                                  name_of(precision::kFp8RecipeNames, f.recipe), f.history_length,
                                  name_of(precision::kAmaxComputeNames, f.amax_compute), f.margin));
  }
  if (settings.master_weights != optim::MasterWeights::float32) {
    rows.emplace_back("master_weights",
                      std::string(name_of(optim::kMasterWeightsNames, settings.master_weights)));
  }
  const bool configured = !std::holds_alternative<amp::NoLossScaling>(settings.loss_scaling);
  switch (loss_scaling_mode(scaler)) {
    case report::LossScalingMode::none:
      if (!configured) {
        rows.emplace_back("loss_scaling_factor", "unset: no loss scaling");
      } else {
        rows.emplace_back("loss_scaling_factor",
                          factor_text(settings.loss_scaling) + ", ignored: " +
                              (settings.enabled ? "bfloat16 has float32's range (no scaler)"
                                                : "mixed precision is off (no scaler)"));
      }
      break;
    case report::LossScalingMode::fixed:
      rows.emplace_back("loss_scaling_factor",
                        support::scale_text(scaler->options().static_scale) + " (static)");
      break;
    case report::LossScalingMode::dynamic:
      rows.emplace_back("loss_scaling_factor", "dynamic");
      dynamic_rows(scaler->options(), rows);
      break;
  }
  if (scaler != nullptr) {
    rows.emplace_back("log_loss_scale", yes_no(settings.logs_loss_scale()));
  }
  const auto optional_text = [](const std::optional<double>& v) {
    return v ? fmt::format("{:g}", *v) : std::string("unset");
  };
  rows.emplace_back("max_gradient_norm", optional_text(settings.max_gradient_norm));
  rows.emplace_back("max_gradient_value", optional_text(settings.max_gradient_value));
  return rows;
}

}  // namespace mantissa::train::detail
