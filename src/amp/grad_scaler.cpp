#include "mantissa/amp/grad_scaler.hpp"

#include <utility>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "mantissa/amp/autocast.hpp"
#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/optim/clip.hpp"
#include "support/number_text.hpp"

namespace mantissa::amp {
namespace {

// A scale multiplies the loss in float32, so it must be a finite float32 > 0.
bool finite_float32(double v) {
  return v > 0 && v <= static_cast<double>(std::numeric_limits<float>::max());
}

}  // namespace

std::string power_of_two_intent(double v) {
  if (!(v > 0) || !std::isfinite(v)) return "";
  for (int k = -30; k <= 38; ++k) {
    if (k == 0 || v != 2.0 * std::pow(10.0, k)) continue;
    const std::string pow2 = support::value_text(std::ldexp(1.0, k));
    return support::value_text(v) + " is 2 x 10^" + std::to_string(k) +
           " as written; the vendor's documentation writes 2e" + std::to_string(k) + " for 2^" +
           std::to_string(k) + " (" + pow2 + "): write " + pow2 + " if that is meant";
  }
  return "";
}

std::string loss_scaling_factor_error(std::string_view given) {
  return "loss_scaling_factor: '" + std::string(given) +
         "' is neither \"dynamic\" nor a finite number > 0";
}

double default_loss_scale() {
  return half_dtype() == Format::cbfloat16 ? 2147483648.0 : 32768.0;  // 2^31, 2^15
}

GradScalerOptions GradScalerOptions::defaults_for(Format half) {
  GradScalerOptions o;
  const double scale = half == Format::cbfloat16 ? 2147483648.0 : 32768.0;
  o.init_scale = scale;
  o.max_loss_scale = scale;
  return o;
}

void GradScalerOptions::validate() const {
  auto fail = [](const std::string& m) { throw Error(m); };
  if (!dynamic && !finite_float32(static_scale))
    fail(loss_scaling_factor_error(support::value_text(static_scale)));
  if (!(min_loss_scale >= 1.0 / 16384)) {
    const std::string intent = power_of_two_intent(min_loss_scale);
    fail("min_loss_scale: " + support::value_text(min_loss_scale) +
         " is below the smallest allowed, 2^-14 (" + support::value_text(1.0 / 16384) + ")" +
         (intent.empty() ? "" : "; " + intent));
  }
  if (!(max_loss_scale >= min_loss_scale) || !finite_float32(max_loss_scale)) {
    fail("max_loss_scale: " + support::value_text(max_loss_scale) + " must be >= min_loss_scale (" +
         support::value_text(min_loss_scale) + ") and a finite float32 (<= " +
         support::value_text(std::numeric_limits<float>::max()) + ")");
  }
  if (dynamic && !(init_scale >= min_loss_scale)) {
    fail("initial_loss_scale: " + support::value_text(init_scale) + " must be >= min_loss_scale (" +
         support::value_text(min_loss_scale) + ")");
  }
  if (steps_per_increase < 1)
    fail("steps_per_increase: " + std::to_string(steps_per_increase) + " must be >= 1");
  if (!(overflow_tolerance >= 0.0 && overflow_tolerance < 1.0)) {
    fail("overflow_tolerance: " + support::value_text(overflow_tolerance) + " must be in [0, 1)");
  }
  if (max_gradient_norm && !(*max_gradient_norm > 0)) {
    fail("max_gradient_norm: " + support::value_text(*max_gradient_norm) + " must be > 0");
  }
  if (!(growth_factor > 1.0) || !std::isfinite(growth_factor)) {
    fail("growth_factor: " + support::value_text(growth_factor) + " must be a finite number > 1");
  }
  if (!(backoff_factor > 0.0 && backoff_factor < 1.0)) {
    fail("backoff_factor: " + support::value_text(backoff_factor) + " must be in (0, 1)");
  }
  if (hysteresis < 1) fail("hysteresis: " + std::to_string(hysteresis) + " must be >= 1");
  if (max_consecutive_skips < 1) {
    fail("max_consecutive_skipped_steps: " + std::to_string(max_consecutive_skips) +
         " must be >= 1");
  }
}

GradScaler::GradScaler(GradScalerOptions options) : options_(std::move(options)) {
  options_.validate();
  state_.loss_scale = options_.dynamic ? options_.init_scale : options_.static_scale;
  if (options_.dynamic && options_.init_scale > options_.max_loss_scale) {
    state_.loss_scale = options_.max_loss_scale;  // the vendor's min(max, init)
    log("initial_loss_scale " + support::value_text(options_.init_scale) +
        " is above max_loss_scale " + support::value_text(options_.max_loss_scale) +
        ": starting at " + support::value_text(options_.max_loss_scale));
  }
  state_.hysteresis_left = options_.hysteresis;
  for (const auto& [key, v] : {std::pair{"initial_loss_scale", options_.init_scale},
                               std::pair{"max_loss_scale", options_.max_loss_scale}}) {
    const std::string intent = options_.dynamic ? power_of_two_intent(v) : "";
    if (!intent.empty()) log(std::string(key) + ": " + intent);
  }
}

namespace {

GradScalerOptions options_for(std::string_view loss_scale) {
  GradScalerOptions o;
  if (loss_scale == "dynamic") return o;
  double v = 0;
  const auto [end, ec] =
      std::from_chars(loss_scale.data(), loss_scale.data() + loss_scale.size(), v);
  if (ec != std::errc() || end != loss_scale.data() + loss_scale.size() || !finite_float32(v)) {
    throw Error(loss_scaling_factor_error(loss_scale));
  }
  o.dynamic = false;
  o.static_scale = v;
  return o;
}

}  // namespace

GradScaler::GradScaler(std::string_view loss_scale) : GradScaler(options_for(loss_scale)) {}

void GradScaler::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Variable GradScaler::scale(const Variable& loss) const {
  if (!loss.defined() || loss.value().numel() != 1) {
    throw Error("GradScaler::scale: the loss has shape " +
                (loss.defined() ? loss.shape().to_string() : std::string("(undefined)")) +
                " (expected one element: the value backward starts from)");
  }
  return autograd::scale(loss, static_cast<float>(state_.loss_scale));
}

GradScaler::PerOptimizer& GradScaler::entry(const optim::Optimizer& optimizer) {
  if (iteration_.empty()) {  // the first optimizer of a new iteration
    iteration_step_ = optimizer.step_index();
    finite_ = true;
    norm_ = 0;
    sum_squares_ = 0;
    agreed_sum_squares_.reset();
    nonfinite_.clear();
  }
  return iteration_[&optimizer];
}

OptimizerStage GradScaler::stage(const optim::Optimizer& optimizer) const {
  const auto it = iteration_.find(&optimizer);
  return it == iteration_.end() ? OptimizerStage::ready : it->second.stage;
}

bool GradScaler::gradients_finite(const optim::Optimizer& optimizer) const {
  const auto it = iteration_.find(&optimizer);
  return it == iteration_.end() || it->second.finite;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (stage(optimizer) == OptimizerStage::unscaled) {
    throw Error("unscale_: already called on this optimizer since the last update()");
  }
  if (stage(optimizer) == OptimizerStage::stepped) {
    throw Error("unscale_: called after step() of this optimizer (unscale_ comes first)");
  }
  PerOptimizer& e = entry(optimizer);
  e.stage = OptimizerStage::unscaled;
  const float inv = static_cast<float>(1.0 / state_.loss_scale);
  const auto& groups = optimizer.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      Variable p = groups[g].params[i];
      if (!p.grad().defined()) continue;
      // One pass: unscale, square, check (the sum is finite exactly when every value is). A
      // gradient stored in another format (bfloat16 master weights) is unscaled in float32
      // and stored back.
      double sum = 0;
      tensor::Tensor& grad = p.mutable_grad();
      if (grad.format() == numerics::Format::float32) {
        sum = kernels::scale_and_sum_squares(grad.f32(), grad.numel(), inv);
      } else {
        tensor::Tensor wide = grad.to(numerics::Format::float32);
        sum = kernels::scale_and_sum_squares(wide.f32(), wide.numel(), inv);
        if (inv != 1.0f) grad = wide.to(grad.format());
      }
      e.sum_squares += sum;
      if (!std::isfinite(sum)) {
        e.finite = false;
        if (options_.attribute_overflows)
          nonfinite_.push_back(optim::parameter_name(groups[g], g, i));
      }
    }
  }
  e.finite = e.finite && std::isfinite(e.sum_squares) && !nonfinite_loss_;
  finite_ = finite_ && e.finite;
  norm_ = std::sqrt(norm_ * norm_ + e.sum_squares);
  sum_squares_ += e.sum_squares;
}

void GradScaler::agree(const StepAgreement& agree) {
  if (iteration_.empty()) throw Error("agree: unscale_ the optimizers first");
  if (clipped_) throw Error("agree: called after the gradients were clipped (agree comes first)");
  for (const auto& [opt, e] : iteration_) {
    if (e.stage == OptimizerStage::stepped) throw Error("agree: called after a step (agree first)");
  }
  const GradientFacts job = agree({finite_, sum_squares_});
  if (!job.finite) {
    finite_ = false;
    for (auto& [opt, e] : iteration_) e.finite = false;
  }
  agreed_sum_squares_ = job.sum_squares;
  norm_ = std::sqrt(job.sum_squares);
}

double GradScaler::clip_grad_norm_(optim::Optimizer& optimizer, double max_norm) {
  if (!(max_norm > 0))
    throw Error("max_gradient_norm: " + support::value_text(max_norm) + " must be > 0");
  if (stage(optimizer) == OptimizerStage::ready) unscale_(optimizer);
  const PerOptimizer& e = iteration_.at(&optimizer);
  const double norm = std::sqrt(e.sum_squares);
  if (!e.finite) return norm;
  const double coef = optim::clip_coefficient(norm, max_norm);
  if (coef < 1.0) {
    std::vector<Variable> params = optimizer.parameters();
    optim::scale_grads_(params, coef);
  }
  return norm;
}

double GradScaler::clip_grad_norm_(double max_norm) {
  if (!(max_norm > 0))
    throw Error("max_gradient_norm: " + support::value_text(max_norm) + " must be > 0");
  double sum = 0;
  for (const auto& [opt, e] : iteration_) sum += e.finite ? e.sum_squares : 0.0;
  if (agreed_sum_squares_) sum = finite_ ? *agreed_sum_squares_ : 0.0;
  const double norm = std::sqrt(sum);
  const double coef = optim::clip_coefficient(norm, max_norm);
  if (coef >= 1.0) return norm;
  for (const auto& [opt, e] : iteration_) {
    if (!e.finite) continue;
    std::vector<Variable> params = opt->parameters();
    optim::scale_grads_(params, coef);
  }
  return norm;
}

bool GradScaler::clip_gradients_and_return_isfinite() {
  if (options_.dynamic && options_.max_gradient_norm && !clipped_) {
    clip_grad_norm_(*options_.max_gradient_norm);
  }
  clipped_ = true;
  return finite_;
}

bool GradScaler::step_if_finite(optim::Optimizer& optimizer) {
  const OptimizerStage at = stage(optimizer);
  if (at == OptimizerStage::ready) {
    throw Error("step_if_finite: unscale_ this optimizer first (or call step(), which does)");
  }
  if (at == OptimizerStage::stepped) {
    throw Error("step: already called on this optimizer since the last update()");
  }
  PerOptimizer& e = iteration_.at(&optimizer);
  e.stage = OptimizerStage::stepped;
  const bool fixed = !options_.dynamic;  // the scale cannot adapt: on_nonfinite decides
  const bool apply = fixed && options_.on_nonfinite == NonFinitePolicy::apply;
  if (e.finite || apply) {
    if (optimizer.step(apply ? optim::NonFiniteUpdate::apply : optim::NonFiniteUpdate::refuse)) {
      return true;
    }
    // Finite gradients, a non-finite result (a learning rate of 1e300, eps 0): not applied,
    // counted as a skipped step; update() ends a run of them.
    if (refused_update_.empty()) refused_update_ = optimizer.refused_tensor();
    ++state_.num_skipped_steps;
    return false;
  }
  // The caller reports the skip: it knows the step's number (the optimizer's step index does
  // not advance on skips); last_nonfinite_params() names the overflowing parameters.
  if (fixed && options_.on_nonfinite == NonFinitePolicy::raise) {
    std::string what = "step " + std::to_string(optimizer.step_index()) + ": non-finite " +
                       (nonfinite_loss_ ? "loss" : "gradients") + " at loss scale " +
                       support::scale_text(state_.loss_scale);
    for (std::size_t i = 0; i < nonfinite_.size(); ++i) what += (i ? ", " : " in ") + nonfinite_[i];
    const autograd::NonfiniteWatch* watch = autograd::NonfiniteWatch::active();
    if (watch != nullptr && watch->first()) what += "; first in " + describe(*watch->first());
    ++state_.num_skipped_steps;  // not applied: the run ends with it
    throw StepGuardError(GuardStop::nonfinite_steps,
                         what + " (precision.on_nonfinite is raise; skip leaves such steps out)",
                         state_.loss_scale, nonfinite_);
  }
  ++state_.num_skipped_steps;
  return false;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (stage(optimizer) == OptimizerStage::ready) unscale_(optimizer);
  clip_gradients_and_return_isfinite();
  return step_if_finite(optimizer);
}

void GradScaler::update() {
  if (iteration_.empty()) {
    throw Error("update: no optimizer was unscaled or stepped since the last update()");
  }
  const std::int64_t step = iteration_step_;
  iteration_.clear();
  clipped_ = false;
  nonfinite_loss_ = false;
  guard_refused_updates();
  if (options_.dynamic && !state_.scaling_stopped) {
    adapt_scale();
  } else if (!options_.dynamic) {
    guard_static_run(step);
  }
}

// Updates that would make a weight or optimizer state non-finite are never applied; a run of
// them (the scale cannot help: the gradients were finite) ends in an error naming the tensor.
void GradScaler::guard_refused_updates() {
  const std::string refused = std::exchange(refused_update_, "");
  refused_in_a_row_ = refused.empty() ? 0 : refused_in_a_row_ + 1;
  if (refused_in_a_row_ < options_.max_consecutive_skips) return;
  throw StepGuardError(
      GuardStop::nonfinite_steps,
      std::to_string(refused_in_a_row_) +
          " steps in a row were not applied: with finite gradients, the optimizer's update "
          "made '" +
          refused +
          "' non-finite (inf or NaN); the learning rate, weight decay or eps make it "
          "diverge: lower them (precision.max_consecutive_skipped_steps: " +
          std::to_string(options_.max_consecutive_skips) + ")",
      state_.loss_scale, {refused}, /*refused_update=*/true);
}

// A fixed scale cannot recover from overflow, nor lift gradients that underflow: a run of
// skipped steps ends in an error saying why, and gradients that are all zero are said once.
void GradScaler::guard_static_run(std::int64_t step) {
  if (finite_ && norm_ == 0.0 && !warned_underflow_) {
    warned_underflow_ = true;
    log(state_.loss_scale == 1.0
            ? "step " + std::to_string(step) + ": every gradient is zero (said once)"
            : "step " + std::to_string(step) +
                  ": every gradient is zero at the static loss scale " +
                  support::scale_text(state_.loss_scale) +
                  ": the scaled gradients underflow to zero in the half format (raise "
                  "loss_scaling_factor or set it to dynamic; said once)");
  }
  const bool skipped = !finite_ && options_.on_nonfinite == NonFinitePolicy::skip;
  skipped_in_a_row_ = skipped ? skipped_in_a_row_ + 1 : 0;
  if (skipped_in_a_row_ < options_.max_consecutive_skips) return;
  const std::string count = std::to_string(skipped_in_a_row_) + " steps in a row";
  const std::string why =
      state_.loss_scale > 1.0
          ? count + " had non-finite gradients at the static loss scale " +
                support::scale_text(state_.loss_scale) +
                ": the scale overflows the half format; lower loss_scaling_factor or set it "
                "to dynamic"
          : count + " had a non-finite loss or gradients at loss scale " +
                support::scale_text(state_.loss_scale) +
                ": the run diverged; lower the learning rate, set max_gradient_norm, or check "
                "the data";
  throw StepGuardError(GuardStop::nonfinite_steps,
                       why + " (precision.max_consecutive_skipped_steps: " +
                           std::to_string(options_.max_consecutive_skips) + ")",
                       state_.loss_scale, nonfinite_);
}

void GradScaler::load_state(const ScalerState& s) {
  check_scaler_state(s);
  if (options_.dynamic && !s.scaling_stopped &&
      !(s.loss_scale >= options_.min_loss_scale && s.loss_scale <= options_.max_loss_scale)) {
    throw Error("scaler state: loss_scale " + support::scale_text(s.loss_scale) +
                " is outside this run's [" + support::scale_text(options_.min_loss_scale) + ", " +
                support::scale_text(options_.max_loss_scale) +
                "] (min_loss_scale, max_loss_scale)");
  }
  if (!options_.dynamic && s.loss_scale != options_.static_scale) {
    throw Error("scaler state: loss_scale " + support::scale_text(s.loss_scale) +
                " is not this run's static scale " + support::scale_text(options_.static_scale));
  }
  state_ = s;
}

// One update of the dynamic scale (docs/design.md section 4, with growth_factor, backoff_factor
// and hysteresis).
void GradScaler::adapt_scale() {
  ScalerState& s = state_;
  const double used = s.loss_scale;  // the scale this iteration's step used
  s.steps_since_rescale += 1;
  s.overflows_since_rescale += finite_ ? 0 : 1;
  if (finite_ && options_.consecutive_hysteresis) s.hysteresis_left = options_.hysteresis;
  const double fraction =
      static_cast<double>(s.overflows_since_rescale) / static_cast<double>(s.steps_since_rescale);
  if (fraction > options_.overflow_tolerance) {
    s.overflows_since_rescale = s.steps_since_rescale = 0;
    if (s.hysteresis_left > 1) {  // tolerate this overflow event; the window restarts
      --s.hysteresis_left;
      return;
    }
    const double wanted = s.loss_scale * options_.backoff_factor;
    if (wanted < options_.min_loss_scale) {
      s.loss_scale = options_.min_loss_scale;
      const std::string what = "loss scale stuck at its minimum " +
                               support::scale_text(options_.min_loss_scale) +
                               ": gradients keep overflowing";
      switch (options_.on_stuck) {
        case StuckPolicy::raise:
          throw StepGuardError(
              GuardStop::loss_scale_floor,
              what + " (set precision.on_stuck to keep_going or fall_back to go on)", used,
              nonfinite_);
        case StuckPolicy::keep_going:
          // Said the first time, then at 10, 100, 1000, ... times: never once a step.
          if (++stuck_events_ == next_stuck_note_) {
            next_stuck_note_ *= 10;
            log(what + "; continuing at the minimum" +
                (stuck_events_ == 1 ? std::string(" (said again at 10, 100, ... times)")
                                    : " (" + std::to_string(stuck_events_) + " times so far)"));
          }
          break;
        case StuckPolicy::fall_back:
          log(what + "; falling back to bfloat16 (float32's range) without loss scaling");
          s.scaling_stopped = true;
          s.loss_scale = 1.0;
          pending_fallback_ = Format::bfloat16;
          break;
      }
      return;
    }
    s.loss_scale = wanted;
  } else if (s.steps_since_rescale > options_.steps_per_increase) {
    s.overflows_since_rescale = s.steps_since_rescale = 0;
    s.loss_scale = std::min(s.loss_scale * options_.growth_factor, options_.max_loss_scale);
    if (!options_.consecutive_hysteresis) s.hysteresis_left = options_.hysteresis;
  }
  s.loss_scale = std::clamp(s.loss_scale, options_.min_loss_scale, options_.max_loss_scale);
}

std::optional<Format> GradScaler::take_fallback() {
  auto f = pending_fallback_;
  pending_fallback_.reset();
  return f;
}

ScalerStateDict GradScaler::state_dict() const {
  return scaler_state_dict(state_, options_.dynamic);
}

void GradScaler::load_state_dict(const ScalerStateDict& dict) {
  load_state(scaler_state_from_dict(dict, options_.dynamic, state_));
}

}  // namespace mantissa::amp
