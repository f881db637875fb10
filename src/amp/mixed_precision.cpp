#include "mantissa/amp/mixed_precision.hpp"

#include <tuple>
#include <type_traits>

#include "mantissa/kernels/gemm_route.hpp"

#include "mantissa/error.hpp"
#include "support/number_text.hpp"

namespace mantissa::amp {
namespace {

bool scales(const LossScaling& s) {
  return !std::holds_alternative<NoLossScaling>(s);
}

// Each setting a scaler takes as it is, with the option it sets: the one list of the mapping.
// An optional setting sets its option only when given (else the format's default stays).
// Clipping is not among them: max_gradient_norm and max_gradient_value reach the step as
// finish_step's arguments only (optimizer_step.hpp).
template <class From, class To>
struct ScalerField {
  From MixedPrecision::*from;
  To GradScalerOptions::*to;
};
template <class T>
constexpr bool kIsOptional = false;
template <class T>
constexpr bool kIsOptional<std::optional<T>> = true;

constexpr auto kScalerFields = std::tuple{
    ScalerField<std::optional<double>, double>{&MixedPrecision::initial_loss_scale,
                                               &GradScalerOptions::init_scale},
    ScalerField<std::optional<std::int64_t>, std::int64_t>{&MixedPrecision::steps_per_increase,
                                                           &GradScalerOptions::steps_per_increase},
    ScalerField<std::optional<double>, double>{&MixedPrecision::min_loss_scale,
                                               &GradScalerOptions::min_loss_scale},
    ScalerField<std::optional<double>, double>{&MixedPrecision::max_loss_scale,
                                               &GradScalerOptions::max_loss_scale},
    ScalerField<double, double>{&MixedPrecision::overflow_tolerance,
                                &GradScalerOptions::overflow_tolerance},
    ScalerField<double, double>{&MixedPrecision::growth_factor, &GradScalerOptions::growth_factor},
    ScalerField<double, double>{&MixedPrecision::backoff_factor,
                                &GradScalerOptions::backoff_factor},
    ScalerField<StuckPolicy, StuckPolicy>{&MixedPrecision::on_stuck, &GradScalerOptions::on_stuck},
    ScalerField<int, int>{&MixedPrecision::hysteresis, &GradScalerOptions::hysteresis},
    ScalerField<bool, bool>{&MixedPrecision::consecutive_hysteresis,
                            &GradScalerOptions::consecutive_hysteresis},
    ScalerField<NonFinitePolicy, NonFinitePolicy>{&MixedPrecision::on_nonfinite,
                                                  &GradScalerOptions::on_nonfinite},
    ScalerField<std::int64_t, std::int64_t>{&MixedPrecision::max_consecutive_skipped_steps,
                                            &GradScalerOptions::max_consecutive_skips},
};

// The scaler options the settings describe (loss scaling must be set).
GradScalerOptions scaler_options(const MixedPrecision& m) {
  GradScalerOptions o = GradScalerOptions::defaults_for(m.policy().half);
  const auto* fixed = std::get_if<StaticLossScaling>(&m.loss_scaling);
  o.dynamic = fixed == nullptr;
  o.static_scale = fixed != nullptr ? fixed->scale : 1.0;
  std::apply(
      [&](const auto&... field) {
        (
            [&](const auto& f) {
              if constexpr (kIsOptional<std::remove_cvref_t<decltype(m.*f.from)>>) {
                if (m.*f.from) o.*f.to = *(m.*f.from);
              } else {
                o.*f.to = m.*f.from;
              }
            }(field),
            ...);
      },
      kScalerFields);
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
    throw Error("max_gradient_norm: " + support::value_text(*max_gradient_norm) + " must be > 0");
  }
  if (max_gradient_value && !(*max_gradient_value > 0)) {
    throw Error("max_gradient_value: " + support::value_text(*max_gradient_value) + " must be > 0");
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
  if (recipe) {
    if (!enabled) {
      throw Error("recipe: needs enabled: true (the layers outside the recipe run in fp16_type)");
    }
    if (fp8.enabled) {
      throw Error(
          "recipe: and fp8.enabled: true both choose the linear layers' recipe (fp8: {enabled: "
          "true} is recipe: {name: delayed}; set one)");
    }
    recipe->validate();
  }
  if (master_weights != optim::MasterWeights::float32 &&
      (!enabled || fp16_type != Format::bfloat16)) {
    throw Error(
        "master_weights: " + std::string(name_of(optim::kMasterWeightsNames, master_weights)) +
        " needs enabled: true and fp16_type: bfloat16 (the weights are the bfloat16 "
        "values the products read)");
  }
  // A route this CPU cannot run is refused now, not at the first product.
  kernels::check_route(enabled ? fp16_type : Format::float32, matmul_route, "matmul_route");
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

std::optional<precision::RecipeSettings> MixedPrecision::linear_recipe() const {
  if (!enabled) return std::nullopt;
  if (recipe) return recipe;
  if (fp8.enabled) return precision::delayed_recipe(fp8);
  return std::nullopt;
}

precision::Policy MixedPrecision::policy() const {
  precision::Fp8Settings f = fp8;
  f.enabled = enabled && (fp8.enabled || recipe.has_value());
  return {enabled ? fp16_type : numerics::Format::float32, precision_opt_level, matmul_route, f};
}

bool MixedPrecision::scales_loss() const {
  return enabled && scales(loss_scaling) && fp16_type != Format::bfloat16;
}

std::unique_ptr<GradScaler> MixedPrecision::make_scaler(
    std::function<void(const std::string&)> log) const {
  validate();
  if (!scales_loss()) {
    if (log && enabled && scales(loss_scaling)) {
      log("bfloat16 has float32's range: loss scaling settings are ignored (no loss scaling)");
    }
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
  o.on_nonfinite = on_nonfinite;
  o.max_consecutive_skips = max_consecutive_skipped_steps;
  o.log = std::move(log);
  return std::make_unique<GradScaler>(std::move(o));
}

}  // namespace mantissa::amp
