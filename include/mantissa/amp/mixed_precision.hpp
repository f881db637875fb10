#pragma once
// The MixedPrecision settings of the seeds' trainer (003): validated as that system does,
// and turned into a precision Policy and (where one applies) a GradScaler.
#include <memory>
#include <optional>
#include <string>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::amp {

struct MixedPrecision {
  bool enabled = true;
  std::string fp16_type = "float16";  // float16 | bfloat16 | cbfloat16 (the seeds' default)
  std::optional<std::string> loss_scaling_factor;  // "dynamic" or a number; unset: none
  std::optional<double> initial_loss_scale;
  std::optional<std::int64_t> steps_per_increase;
  std::optional<double> min_loss_scale;
  std::optional<double> max_loss_scale;
  std::optional<double> max_gradient_norm;
  std::optional<double> max_gradient_value;
  int precision_opt_level = 1;
  // Beyond the seeds (see docs/mixed_precision.md):
  double overflow_tolerance = 0.0;
  std::string on_stuck = "raise";  // raise | keep_going | fall_back
  int hysteresis = 1;
  bool grow_only_if_finite = false;

  // Throws mantissa::Error naming the setting and the allowed values.
  void validate() const;
  precision::Policy policy() const;
  // The scaler these settings call for: none when disabled, for bfloat16 (any scaling
  // settings are then ignored with one log line), or when loss_scaling_factor is unset.
  std::unique_ptr<GradScaler> make_scaler(std::function<void(const std::string&)> log = {}) const;
};

}  // namespace mantissa::amp
