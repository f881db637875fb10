#pragma once
// The MixedPrecision settings of the vendor's trainer, typed: validated as that system
// does, and turned into a precision Policy and (where one applies) a GradScaler. The words
// of a config (fp16_type: float16, loss_scaling_factor: dynamic, on_stuck: raise) become
// these values in the config parser (train/config.cpp), once.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/optim/training_state.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/precision/recipe.hpp"

namespace mantissa::amp {

// loss_scaling_factor: unset, a number (static scaling) or "dynamic".
struct NoLossScaling {
  bool operator==(const NoLossScaling&) const = default;
};
struct StaticLossScaling {
  double scale = 1.0;
  bool operator==(const StaticLossScaling&) const = default;
};
struct DynamicLossScaling {
  bool operator==(const DynamicLossScaling&) const = default;
};
using LossScaling = std::variant<NoLossScaling, StaticLossScaling, DynamicLossScaling>;

struct MixedPrecision {
  bool enabled = true;
  Format fp16_type = Format::bfloat16;  // float16 | bfloat16 | cbfloat16 (the vendor's default)
  LossScaling loss_scaling;             // loss_scaling_factor; unset: no scaler
  std::optional<double> initial_loss_scale;
  std::optional<std::int64_t> steps_per_increase;
  std::optional<double> min_loss_scale;
  std::optional<double> max_loss_scale;
  std::optional<double> max_gradient_norm;
  std::optional<double> max_gradient_value;
  int precision_opt_level = 1;
  // Which hardware runs the matrix products (kernels/gemm_route.hpp); beyond the vendor's system.
  precision::MatmulRoute matmul_route = precision::MatmulRoute::automatic;
  // Record the loss scale in every metrics record; unset: when scaling is dynamic (the
  // vendor's default).
  std::optional<bool> log_loss_scale;
  // Beyond the vendor's system (see docs/mixed_precision.md):
  double overflow_tolerance = 0.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  StuckPolicy on_stuck = StuckPolicy::raise;
  int hysteresis = 1;
  bool consecutive_hysteresis = false;
  // fp8 linear layers (precision/fp8.hpp): `fp8: {enabled, recipe, history_length,
  // amax_compute, margin}`; the rest of the model runs in fp16_type.
  precision::Fp8Settings fp8;
  // The linear layers' recipe (precision/recipe.hpp): `recipe: {name, ...}`; fp8 above is the
  // older spelling of the delayed recipe, and the two are exclusive.
  std::optional<precision::RecipeSettings> recipe;
  // The parameters' own format (optim/training_state.hpp); bfloat16_* needs fp16_type
  // bfloat16.
  optim::MasterWeights master_weights = optim::MasterWeights::float32;
  // The non-finite guard of steps whose scale does not adapt (static scaling, no scaling).
  NonFinitePolicy on_nonfinite = NonFinitePolicy::skip;
  std::int64_t max_consecutive_skipped_steps = 20;

  bool operator==(const MixedPrecision&) const = default;
  bool logs_loss_scale() const;

  // Throws mantissa::Error naming the setting and the allowed values.
  void validate() const;
  // The policy: fp8 enabled (the switch the quantized linear layers read) when either
  // spelling chooses a recipe.
  precision::Policy policy() const;
  // The recipe the linear layers run: `recipe`, or the delayed one when fp8 is enabled;
  // nullopt when neither (or mixed precision is off).
  std::optional<precision::RecipeSettings> linear_recipe() const;
  // Whether these settings scale the loss: enabled, loss scaling set, and a format narrower
  // in range than float32 (float16, cbfloat16; bfloat16 ignores the scaling settings).
  bool scales_loss() const;
  // The scaler these settings call for (clipping aside: max_gradient_norm and
  // max_gradient_value are finish_step's arguments, the one road by which they reach a step):
  // none when disabled, for bfloat16 (any scaling
  // settings are then ignored with one line to `log`), or when loss scaling is unset.
  std::unique_ptr<GradScaler> make_scaler(std::function<void(const std::string&)> log = {}) const;
  // The scaler a training step runs through: make_scaler's, or where that makes none a
  // GradScaler at the fixed scale 1, which scales nothing and guards every step against a
  // non-finite loss or gradients (on_nonfinite), counting skipped steps as dynamic scaling
  // does.
  std::unique_ptr<GradScaler> make_step_guard(std::function<void(const std::string&)> log) const;
};

}  // namespace mantissa::amp
