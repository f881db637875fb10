#include "mantissa/amp/grad_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/optim/clip.hpp"

namespace mantissa::amp {
namespace {

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

std::string loss_scaling_factor_error(std::string_view given) {
  return "loss_scaling_factor: '" + std::string(given) +
         "' is neither \"dynamic\" nor a finite number > 0";
}

GradScalerOptions GradScalerOptions::defaults_for(Format half) {
  GradScalerOptions o;
  if (half == Format::cbfloat16) {
    o.init_scale = 2147483648.0;  // 2^31
    o.max_loss_scale = 2147483648.0;
  }
  return o;
}

void GradScalerOptions::validate() const {
  auto fail = [](const std::string& m) { throw Error(m); };
  if (!dynamic && !(static_scale > 0 && std::isfinite(static_scale))) {
    fail(loss_scaling_factor_error(num(static_scale)));
  }
  if (!(min_loss_scale >= 1.0 / 16384)) {
    fail("min_loss_scale: " + num(min_loss_scale) + " is below the smallest allowed, 2^-14 (" +
         num(1.0 / 16384) + ")");
  }
  if (!(max_loss_scale >= min_loss_scale) || !std::isfinite(max_loss_scale)) {
    fail("max_loss_scale: " + num(max_loss_scale) + " must be finite and >= min_loss_scale (" +
         num(min_loss_scale) + ")");
  }
  if (dynamic && !(init_scale >= min_loss_scale && init_scale <= max_loss_scale)) {
    fail("initial_loss_scale: " + num(init_scale) +
         " must lie in [min_loss_scale, max_loss_scale] = [" + num(min_loss_scale) + ", " +
         num(max_loss_scale) + "]");
  }
  if (steps_per_increase < 1)
    fail("steps_per_increase: " + num(static_cast<double>(steps_per_increase)) + " must be >= 1");
  if (!(overflow_tolerance >= 0.0 && overflow_tolerance < 1.0)) {
    fail("overflow_tolerance: " + num(overflow_tolerance) + " must be in [0, 1)");
  }
  if (max_gradient_norm && !(*max_gradient_norm > 0)) {
    fail("max_gradient_norm: " + num(*max_gradient_norm) + " must be > 0");
  }
  if (hysteresis < 1) fail("hysteresis: " + num(hysteresis) + " must be >= 1");
}

GradScaler::GradScaler(GradScalerOptions options) : options_(std::move(options)) {
  options_.validate();
  state_.loss_scale = options_.dynamic ? options_.init_scale : options_.static_scale;
  state_.hysteresis_left = options_.hysteresis;
}

void GradScaler::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Variable GradScaler::scale(const Variable& loss) const {
  return autograd::scale(loss, static_cast<float>(state_.loss_scale));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (unscaled_) return;
  unscaled_ = true;
  nonfinite_.clear();
  const float inv = static_cast<float>(1.0 / state_.loss_scale);
  bool all_finite = true;
  double total = 0;
  const auto& groups = optimizer.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      Variable p = groups[g].params[i];
      if (!p.grad().defined()) continue;
      float* x = p.mutable_grad().f32();
      const std::int64_t n = p.grad().numel();
      // One pass: unscale, square, check (the sum is finite exactly when every value is).
      const double sum = kernels::scale_and_sum_squares(x, n, inv);
      const bool finite = std::isfinite(sum);
      total += sum;
      if (!finite) {
        all_finite = false;
        if (options_.attribute_overflows)
          nonfinite_.push_back(optim::parameter_name(groups[g], g, i));
      }
    }
  }
  norm_ = std::sqrt(total);
  finite_ = all_finite && std::isfinite(norm_);
}

double GradScaler::clip_grad_norm_(optim::Optimizer& optimizer, double max_norm) {
  if (!(max_norm > 0)) throw Error("max_gradient_norm: " + num(max_norm) + " must be > 0");
  unscale_(optimizer);
  if (!finite_) return norm_;
  const double coef = optim::clip_coefficient(norm_, max_norm);
  if (coef < 1.0) {
    std::vector<Variable> params = optimizer.parameters();
    optim::scale_grads_(params, coef);
  }
  return norm_;
}

bool GradScaler::step_if_finite(optim::Optimizer& optimizer) {
  // Static scaling steps whatever the gradients hold (DESIGN.md section 4).
  const bool take = finite_ || !options_.dynamic;
  if (take) {
    optimizer.step();
    return true;
  }
  // The caller reports the skip: it knows the step's number (the optimizer's step index does
  // not advance on skips); last_nonfinite_params() names the overflowing parameters.
  ++state_.num_skipped_steps;
  return false;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  unscale_(optimizer);
  if (options_.max_gradient_norm) clip_grad_norm_(optimizer, *options_.max_gradient_norm);
  return step_if_finite(optimizer);
}

void GradScaler::update() {
  unscaled_ = false;
  if (!options_.dynamic || state_.scaling_stopped) return;
  ScalerState& s = state_;
  s.steps_since_rescale += 1;
  s.overflows_since_rescale += finite_ ? 0 : 1;
  if (finite_) s.hysteresis_left = options_.hysteresis;
  const double fraction =
      static_cast<double>(s.overflows_since_rescale) / static_cast<double>(s.steps_since_rescale);
  if (fraction > options_.overflow_tolerance) {
    if (s.hysteresis_left > 1) {  // tolerate this overflow event; the window restarts
      --s.hysteresis_left;
      s.overflows_since_rescale = s.steps_since_rescale = 0;
      return;
    }
    s.hysteresis_left = options_.hysteresis;
    s.overflows_since_rescale = s.steps_since_rescale = 0;
    const double wanted = s.loss_scale / 2;
    if (wanted < options_.min_loss_scale) {
      s.loss_scale = options_.min_loss_scale;
      const std::string what = "loss scale stuck at its minimum " + num(options_.min_loss_scale) +
                               ": gradients keep overflowing";
      switch (options_.on_stuck) {
        case StuckPolicy::raise:
          throw Error(what + " (set precision.on_stuck to keep_going or fall_back to go on)");
        case StuckPolicy::keep_going:
          log(what + "; continuing at the minimum");
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
    const double grown = s.loss_scale * 2;
    if (options_.grow_only_if_finite && !std::isfinite(static_cast<float>(grown))) return;
    s.loss_scale = std::min(grown, options_.max_loss_scale);
  }
  s.loss_scale = std::clamp(s.loss_scale, options_.min_loss_scale, options_.max_loss_scale);
}

std::optional<Format> GradScaler::take_fallback() {
  auto f = pending_fallback_;
  pending_fallback_.reset();
  return f;
}

}  // namespace mantissa::amp
