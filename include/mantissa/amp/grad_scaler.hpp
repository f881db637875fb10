#pragma once
// GradScaler: static and dynamic loss scaling, with global gradient clipping (DLS + GCC),
// exactly the algorithm of docs/design.md section 4 and the vendor's documentation, with PyTorch's
// per-optimizer protocol:
//   scale(loss) = loss * S; unscale_(opt) multiplies every gradient by 1/S and, in the same
//   pass, sums each tensor's squares (double) and notes non-finite elements; step(opt) or
//   step_if_finite(opt) steps an optimizer only when its own gradients are finite (a skipped
//   step leaves parameters, optimizer state and the schedule's step index untouched); after
//   every optimizer of the iteration has been stepped, one update() adapts S.
// Each optimizer moves through ready -> unscaled -> stepped between two update() calls; a
// second unscale_ of the same optimizer, an unscale_ after its step, or a second step raise
// mantissa::Error (as PyTorch's GradScaler raises RuntimeError).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/autograd/variable.hpp"
#include "mantissa/error.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::amp {

using autograd::Variable;
using numerics::Format;

// Data parallel: what unscale_ found in this process (its gradients finite, their squared L2
// norm), and what the processes of a job agree on from everyone's. A StepAgreement receives
// this process's facts and returns the job's (the trainer's comes from dist::agree_on_step).
struct GradientFacts {
  bool finite = true;
  double sum_squares = 0;
};
using StepAgreement = std::function<GradientFacts(const GradientFacts&)>;

// What update() does when a decrease would take S below min_loss_scale.
enum class StuckPolicy {
  raise,       // throw mantissa::Error (the vendor's trainer behaviour; the default)
  keep_going,  // log and continue at the minimum
  fall_back,   // log, stop scaling, and ask the caller to switch to a wider format
};
inline constexpr NameTable<StuckPolicy, 3> kStuckPolicyNames = {{
    {"raise", StuckPolicy::raise},
    {"keep_going", StuckPolicy::keep_going},
    {"fall_back", StuckPolicy::fall_back},
}};
static_assert(in_enum_order(kStuckPolicyNames,
                            static_cast<std::size_t>(StuckPolicy::fall_back) + 1));

// What a step whose loss or gradients hold inf or NaN does when the scale does not adapt
// (static scaling, or no scaling: float32, bfloat16). Dynamic scaling always skips such a
// step and lowers the scale (on_stuck governs the floor).
enum class NonFinitePolicy {
  skip,   // leave parameters and optimizer state as they were; count it (the default)
  raise,  // throw mantissa::Error naming the step and the parameters
  apply,  // step anyway (the weights take the inf/NaN: for experiments)
};
inline constexpr NameTable<NonFinitePolicy, 3> kNonFinitePolicyNames = {{
    {"skip", NonFinitePolicy::skip},
    {"raise", NonFinitePolicy::raise},
    {"apply", NonFinitePolicy::apply},
}};
static_assert(in_enum_order(kNonFinitePolicyNames,
                            static_cast<std::size_t>(NonFinitePolicy::apply) + 1));

// Why the step guard ended a run: the dynamic scale had to go below min_loss_scale with
// on_stuck: raise, or too many steps in a row were not applied (non-finite gradients at a
// scale that cannot adapt, or updates that would have made the state non-finite).
enum class GuardStop { loss_scale_floor, nonfinite_steps };

// The error the step guard throws when it ends a run, with the facts of the step that ended
// it (a skipped step: nothing of it was applied), so a trainer can record that step and why
// the run stopped. Its message says why and what to change.
class StepGuardError : public Error {
 public:
  StepGuardError(GuardStop why, const std::string& message, double loss_scale,
                 std::vector<std::string> tensors, bool refused_update = false)
      : Error(message),
        why_(why),
        loss_scale_(loss_scale),
        tensors_(std::move(tensors)),
        refused_update_(refused_update) {
    const autograd::NonfiniteWatch* watch = autograd::NonfiniteWatch::active();
    if (!refused_update && watch != nullptr) first_nonfinite_ = watch->first();
  }
  GuardStop why() const { return why_; }
  double loss_scale() const { return loss_scale_; }  // the scale the last step used
  // The parameters whose gradients (or loss) held inf or NaN; or, when refused_update(), the
  // tensor the update would have made non-finite from finite gradients.
  const std::vector<std::string>& tensors() const { return tensors_; }
  bool refused_update() const { return refused_update_; }
  // Where the last step's backward first went non-finite, when a NonfiniteWatch alive where
  // the error was made watched it (the trainer's step).
  const std::optional<autograd::NonfiniteOrigin>& first_nonfinite() const {
    return first_nonfinite_;
  }

 private:
  GuardStop why_;
  double loss_scale_;
  std::vector<std::string> tensors_;
  bool refused_update_;
  std::optional<autograd::NonfiniteOrigin> first_nonfinite_;
};

// The vendor's documentation lists the scaler's defaults as 2e15 and 2e-14, meaning 2^15 and
// 2^-14. For a value 2 x 10^k (k != 0) as written: a note saying how it is taken and what was
// likely meant ("2e+15 is 2 x 10^15 as written; ... write 32768 if that is meant"); else "".
// GradScaler logs it for initial_loss_scale and max_loss_scale (accepted as written); the
// refusal of min_loss_scale 2e-14 (below 2^-14) carries it.
std::string power_of_two_intent(double value);

// The one message for a loss_scaling_factor that is neither "dynamic" nor a finite number > 0.
std::string loss_scaling_factor_error(std::string_view given);

// The default initial and maximum loss scale for the process's half format (set_half_dtype):
// 2^31 for cbfloat16 (6 exponent bits: its largest value is near 2^32), else 2^15.
// GradScalerOptions{} takes it, so set_half_dtype("cbfloat16") then GradScalerOptions{} starts
// where a cbfloat16 config does.
double default_loss_scale();

struct GradScalerOptions {
  bool dynamic = true;
  double static_scale = 1.0;                 // the loss scale when !dynamic
  double init_scale = default_loss_scale();  // 2^15 (2^31 for cbfloat16); above max: max
  std::int64_t steps_per_increase = 2000;
  double min_loss_scale = 1.0 / 16384;           // 2^-14, the smallest allowed
  double max_loss_scale = default_loss_scale();  // a finite float32 (it multiplies in float32)
  double overflow_tolerance = 0.0;               // fraction of overflowing steps tolerated
  std::optional<double> max_gradient_norm;       // DLS + GCC (ignored by static scaling)
  // Beyond the vendor's system (their system fixes growth at 2 and backoff at 0.5; PyTorch's
  // names):
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  StuckPolicy on_stuck = StuckPolicy::raise;
  // DeepSpeed/Megatron hysteresis: a decrease happens only on the h-th overflow event; an
  // event it tolerates restarts the growth window. The allowance is refilled when the scale
  // grows (consecutive_hysteresis false: DeepSpeed's and Megatron's default), or on every
  // step with finite gradients (true: DeepSpeed's consecutive_hysteresis). A decrease does
  // not refill it, so once it is spent each further event decreases until the refill.
  int hysteresis = 1;
  bool consecutive_hysteresis = false;
  bool attribute_overflows = true;  // name the parameters with non-finite gradients
  // Static scaling (and scale 1, no scaling): what a non-finite step does, and how many
  // skipped steps in a row end the run with an error saying why (the scale cannot adapt, so
  // they would go on forever). In every mode, an update that would make a weight or the
  // optimizer state non-finite is not applied (Optimizer::step) and counted as a skipped
  // step; max_consecutive_skips of them in a row end the run with an error naming the tensor.
  NonFinitePolicy on_nonfinite = NonFinitePolicy::skip;
  std::int64_t max_consecutive_skips = 20;
  // Receives stuck-scale and clamped-initial-scale lines; unset: they are dropped (the
  // library prints nothing itself). Skipped steps are the caller's to report (the trainer
  // names the step and the parameters in a log line and a metrics record); StepReport and
  // last_nonfinite_params() carry them.
  std::function<void(const std::string&)> log;

  // The defaults for a given half format: init and max 2^15, or 2^31 for cbfloat16.
  static GradScalerOptions defaults_for(Format half);
  // Throws mantissa::Error naming the option and what is allowed.
  void validate() const;
};

struct ScalerState {
  double loss_scale = 1.0;
  std::int64_t steps_since_rescale = 0;
  std::int64_t overflows_since_rescale = 0;
  std::int64_t num_skipped_steps = 0;  // skipped optimizer steps (each optimizer's)
  std::int64_t hysteresis_left = 1;
  bool scaling_stopped = false;  // after a fall-back
};
// The state as a checkpoint keeps it (one JSON object, a key per field) and back: one pair
// over one field list. decode throws mantissa::Error naming a missing or mistyped field.
std::string encode_scaler_state(const ScalerState& state);
ScalerState decode_scaler_state(const std::string& json_text);
// Throws mantissa::Error naming the first field out of range: loss_scale a finite float32
// > 0, counters >= 0, hysteresis_left >= 1.
void check_scaler_state(const ScalerState& state);

// The vendor's state_dict(): a key per field. Dynamic scaling: every field of ScalerState
// (the vendor's loss_scale, steps_since_rescale, overflows_since_rescale, num_skipped_steps,
// and hysteresis_left, scaling_stopped); static: {loss_scale}.
using ScalerStateValue = std::variant<double, std::int64_t, bool>;
using ScalerStateDict = std::map<std::string, ScalerStateValue>;
ScalerStateDict scaler_state_dict(const ScalerState& state, bool dynamic);
// `base` with the dict's fields; throws mantissa::Error naming a missing, mistyped or unknown
// key (a static scaler reads loss_scale alone from a dynamic scaler's dict).
ScalerState scaler_state_from_dict(const ScalerStateDict& dict, bool dynamic, ScalerState base);

// Where an optimizer is in the current iteration (between two update() calls).
enum class OptimizerStage { ready, unscaled, stepped };

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options);
  // The vendor's GradScaler(loss_scale="dynamic"): "dynamic" (the defaults for half_dtype()),
  // or a number (static scaling at it); anything else throws mantissa::Error.
  explicit GradScaler(std::string_view loss_scale);

  // loss (one element) times the scale, as float32.
  Variable scale(const Variable& loss) const;
  // One pass over the optimizer's gradients: multiply by 1/S, per-tensor sums of squares in
  // double, non-finite detection. Once per optimizer and iteration: throws when this
  // optimizer was already unscaled or stepped since the last update().
  void unscale_(optim::Optimizer& optimizer);
  // Clips the gradients of `optimizer` (unscaling it first when still ready) by their own
  // norm, measured by unscale_ (no extra pass); only when they are finite. Returns the
  // (unclipped) norm.
  double clip_grad_norm_(optim::Optimizer& optimizer, double max_norm);
  // Clips the gradients of every optimizer unscaled since the last update() by their global
  // norm: the norm of the gradients that will be applied, i.e. over the optimizers whose
  // gradients are finite. Returns that norm (unclipped).
  double clip_grad_norm_(double max_norm);
  // The vendor's DLS + GCC step: with dynamic scaling and max_gradient_norm, clips as
  // clip_grad_norm_(max_gradient_norm) (once per iteration); returns whether every optimizer
  // unscaled since the last update() has finite gradients.
  bool clip_gradients_and_return_isfinite();
  // Data parallel, after unscale_ of every optimizer of the iteration and before clipping and
  // step_if_finite: this iteration's facts become those `agree` returns from them. Agreed
  // non-finite makes every optimizer's step a skip (and update() counts an overflow); the
  // agreed norm is the one clip_grad_norm_(max_norm) and last_grad_norm() use. So processes
  // that agree skip the same steps, clip by the same coefficient and keep the same state.
  void agree(const StepAgreement& agree);
  // optimizer.step() when this optimizer's gradients (and the loss) are finite; else counts a
  // skipped step and changes nothing (static scaling: as on_nonfinite says). Needs unscale_
  // first; throws after a step of the same optimizer in this iteration. Returns whether it
  // stepped.
  bool step_if_finite(optim::Optimizer& optimizer);
  // Marks the current iteration's loss as non-finite (inf or NaN): its steps are non-finite
  // whatever the gradients hold. Call before step_if_finite; update() clears it.
  void note_nonfinite_loss() { nonfinite_loss_ = true; }
  // unscale_ (when still ready), clip_gradients_and_return_isfinite, step_if_finite.
  bool step(optim::Optimizer& optimizer);
  // After every optimizer of the iteration was stepped: adapts the scale (dynamic mode;
  // an overflow in any optimizer counts as one overflowing step) and readies every optimizer
  // for the next iteration. Throws when no optimizer was unscaled since the last update().
  void update();

  double get_scale() const { return state_.loss_scale; }
  OptimizerStage stage(const optim::Optimizer& optimizer) const;
  // Whether this optimizer's gradients were finite at its unscale_ in this iteration (true
  // before it).
  bool gradients_finite(const optim::Optimizer& optimizer) const;
  // The current (or, after update(), the last) iteration: every optimizer's gradients
  // finite; their global norm (unscaled, before clipping); the parameters whose gradients
  // held inf or NaN (when attribution is on).
  bool last_step_finite() const { return finite_; }
  double last_grad_norm() const { return norm_; }
  const std::vector<std::string>& last_nonfinite_params() const { return nonfinite_; }
  // The tensor whose non-finite result made step_if_finite refuse this iteration's update
  // ("<param>" or "<param>.<state>"); empty when none was refused. update() clears it.
  const std::string& refused_update() const { return refused_update_; }
  std::int64_t num_skipped_steps() const { return state_.num_skipped_steps; }
  // After a fall-back: the format to switch to (bfloat16), once; nullopt otherwise.
  std::optional<Format> take_fallback();

  const GradScalerOptions& options() const { return options_; }
  const ScalerState& state() const { return state_; }
  // Takes a saved state (a checkpoint's); throws mantissa::Error when it is out of range for
  // these options (a scale outside [min_loss_scale, max_loss_scale], negative counters).
  void load_state(const ScalerState& s);
  // The vendor's names for the same state: scaler_state_dict / scaler_state_from_dict.
  ScalerStateDict state_dict() const;
  void load_state_dict(const ScalerStateDict& dict);

 private:
  struct PerOptimizer {
    OptimizerStage stage = OptimizerStage::ready;
    double sum_squares = 0;
    bool finite = true;
  };
  PerOptimizer& entry(const optim::Optimizer& optimizer);
  void log(const std::string& line) const;
  void adapt_scale();
  void guard_static_run(std::int64_t step);
  void guard_refused_updates();

  GradScalerOptions options_;
  ScalerState state_;
  std::map<const optim::Optimizer*, PerOptimizer> iteration_;
  bool clipped_ = false;  // clip_gradients_and_return_isfinite ran in this iteration
  bool finite_ = true;
  double norm_ = 0;
  double sum_squares_ = 0;                    // this iteration's, in unscale_ order
  std::optional<double> agreed_sum_squares_;  // after agree()
  std::vector<std::string> nonfinite_;
  std::optional<Format> pending_fallback_;
  bool nonfinite_loss_ = false;
  bool warned_underflow_ = false;
  std::int64_t iteration_step_ = 0;    // the first optimizer's step index in this iteration
  std::int64_t skipped_in_a_row_ = 0;  // iterations (static scaling), not saved
  std::string refused_update_;         // this iteration's, from Optimizer::step
  std::int64_t stuck_events_ = 0;      // keep_going: times the scale hit its floor
  std::int64_t next_stuck_note_ = 1;   // ... and when that is said next (1, 10, 100, ...)
  std::int64_t refused_in_a_row_ = 0;  // iterations whose update was refused, not saved
};

}  // namespace mantissa::amp
