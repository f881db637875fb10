#pragma once
// GradScaler: static and dynamic loss scaling, with global gradient clipping (DLS + GCC),
// exactly the algorithm of DESIGN.md section 4 and the seeds (000, 001):
//   scale(loss) = loss * S; unscale_(opt) multiplies every gradient by 1/S and, in the same
//   pass, sums each tensor's squares (double) and notes non-finite elements;
//   finite := every element finite and the global norm finite; step_if_finite(opt) steps
//   only then (a skipped step leaves parameters, optimizer state and the schedule's step
//   index untouched); update() adapts S.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::amp {

using autograd::Variable;
using numerics::Format;

// What update() does when a decrease would take S below min_loss_scale.
enum class StuckPolicy {
  raise,       // throw mantissa::Error (the seeds' trainer behaviour; the default)
  keep_going,  // log and continue at the minimum
  fall_back,   // log, stop scaling, and ask the caller to switch to a wider format
};
inline constexpr NameTable<StuckPolicy, 3> kStuckPolicyNames = {{
    {"raise", StuckPolicy::raise},
    {"keep_going", StuckPolicy::keep_going},
    {"fall_back", StuckPolicy::fall_back},
}};

// The one message for a loss_scaling_factor that is neither "dynamic" nor a finite number > 0.
std::string loss_scaling_factor_error(std::string_view given);

struct GradScalerOptions {
  bool dynamic = true;
  double static_scale = 1.0;    // the loss scale when !dynamic
  double init_scale = 32768.0;  // 2^15 (2^31 for cbfloat16: defaults_for)
  std::int64_t steps_per_increase = 2000;
  double min_loss_scale = 1.0 / 16384;  // 2^-14, the smallest allowed
  double max_loss_scale = 32768.0;
  double overflow_tolerance = 0.0;          // fraction of overflowing steps tolerated
  std::optional<double> max_gradient_norm;  // DLS + GCC
  // Beyond the seeds:
  StuckPolicy on_stuck = StuckPolicy::raise;
  int hysteresis = 1;                // decreases only on the h-th consecutive overflow event
  bool grow_only_if_finite = false;  // skip a growth whose result would not be finite
  bool attribute_overflows = true;   // name the parameters with non-finite gradients
  // Receives stuck-scale lines; unset: they are dropped (the library prints nothing itself).
  // Skipped steps are the caller's to report (the trainer names the step and the parameters
  // in a log line and a metrics record); StepReport and last_nonfinite_params() carry them.
  std::function<void(const std::string&)> log;

  // The defaults for a half format: init and max 2^15, or 2^31 for cbfloat16.
  static GradScalerOptions defaults_for(Format half);
  // Throws mantissa::Error naming the option and what is allowed.
  void validate() const;
};

struct ScalerState {
  double loss_scale = 1.0;
  std::int64_t steps_since_rescale = 0;
  std::int64_t overflows_since_rescale = 0;
  std::int64_t num_skipped_steps = 0;
  std::int64_t hysteresis_left = 1;
  bool scaling_stopped = false;  // after a fall-back
};
// The state as a checkpoint keeps it (one JSON object, a key per field) and back: one pair
// over one field list. decode throws mantissa::Error naming a missing or mistyped field.
std::string encode_scaler_state(const ScalerState& state);
ScalerState decode_scaler_state(const std::string& json_text);

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options);

  // loss (one element) times the scale, as float32.
  Variable scale(const Variable& loss) const;
  // One pass over the optimizer's gradients: multiply by 1/S, per-tensor sums of squares in
  // double, non-finite detection. Once per step (a second call before update() is a no-op).
  void unscale_(optim::Optimizer& optimizer);
  // Global gradient clipping with the norm unscale_ measured (no extra pass); only when the
  // gradients are finite. Returns the (unclipped) norm.
  double clip_grad_norm_(optim::Optimizer& optimizer, double max_norm);
  // optimizer.step() when the last unscale_ found finite gradients; else counts a skipped
  // step and changes nothing. Returns whether it stepped.
  bool step_if_finite(optim::Optimizer& optimizer);
  // unscale_ (if not yet), clip with max_gradient_norm when set, step_if_finite.
  bool step(optim::Optimizer& optimizer);
  // Adapts the scale after the step (dynamic mode), and readies the next unscale_.
  void update();

  double get_scale() const { return state_.loss_scale; }
  bool last_step_finite() const { return finite_; }
  double last_grad_norm() const { return norm_; }  // unscaled, before clipping
  // Parameters whose gradients held inf or NaN in the last unscale_ (when attribution is on).
  const std::vector<std::string>& last_nonfinite_params() const { return nonfinite_; }
  std::int64_t num_skipped_steps() const { return state_.num_skipped_steps; }
  // After a fall-back: the format to switch to (bfloat16), once; nullopt otherwise.
  std::optional<Format> take_fallback();

  const GradScalerOptions& options() const { return options_; }
  const ScalerState& state() const { return state_; }
  void load_state(const ScalerState& s) { state_ = s; }

 private:
  void log(const std::string& line) const;
  GradScalerOptions options_;
  ScalerState state_;
  bool unscaled_ = false;
  bool finite_ = true;
  double norm_ = 0;
  std::vector<std::string> nonfinite_;
  std::optional<Format> pending_fallback_;
};

}  // namespace mantissa::amp
