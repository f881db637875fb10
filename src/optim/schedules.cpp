#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numbers>

#include "mantissa/error.hpp"
#include "mantissa/optim/schedule.hpp"
#include "support/number_text.hpp"

namespace mantissa::optim {
namespace {

constexpr double kPi = std::numbers::pi;

// A schedule from a closure and its description.
class Fn final : public Schedule {
 public:
  Fn(std::function<double(std::int64_t)> f, std::string d) : f_(std::move(f)), d_(std::move(d)) {}
  double value(std::int64_t step) const override {
    if (step < 0) throw Error("schedule " + d_ + ": negative step " + std::to_string(step));
    return f_(step);
  }
  std::string describe() const override { return d_; }

 private:
  std::function<double(std::int64_t)> f_;
  std::string d_;
};

SchedulePtr make(std::function<double(std::int64_t)> f, std::string d) {
  return std::make_shared<Fn>(std::move(f), std::move(d));
}

void require(bool ok, const std::string& schedule, const std::string& message) {
  if (!ok) throw Error("schedule " + schedule + ": " + message);
}

struct Argument {
  const char* name;
  double value;
};

// Every number a schedule is built from is finite: a NaN or an infinity is refused here, when
// the schedule is made, not by the optimizer at its first step.
void require_finite(const std::string& schedule, std::initializer_list<Argument> arguments) {
  for (const Argument& a : arguments) {
    require(std::isfinite(a.value), schedule,
            std::string(a.name) + " is " + support::value_text(a.value) +
                " (expected a finite number)");
  }
}

}  // namespace

SchedulePtr constant(double value) {
  require_finite("Constant", {{"value", value}});
  return make([value](std::int64_t) { return value; },
              "Constant(" + support::value_text(value) + ")");
}

SchedulePtr linear(double initial, double end, std::int64_t total_iters) {
  require_finite("Linear", {{"initial", initial}, {"end", end}});
  require(total_iters > 0, "Linear",
          "total_iters must be > 0 (got " + std::to_string(total_iters) + ")");
  return make(
      [=](std::int64_t s) {
        return initial + (end - initial) * static_cast<double>(std::min(s, total_iters)) /
                             static_cast<double>(total_iters);
      },
      "Linear(" + support::value_text(initial) + " -> " + support::value_text(end) + " over " +
          std::to_string(total_iters) + ")");
}

SchedulePtr polynomial(double initial, double end, std::int64_t total_iters, double power,
                       bool cycle) {
  require_finite("Polynomial", {{"initial", initial}, {"end", end}, {"power", power}});
  require(total_iters > 0, "Polynomial", "total_iters must be > 0");
  return make(
      [=](std::int64_t s) {
        double t = static_cast<double>(total_iters);
        if (cycle) {
          t *= std::max(1.0, std::ceil(static_cast<double>(s) / t));
        }
        const double frac = std::min(static_cast<double>(s), t) / t;
        return (initial - end) * std::pow(1.0 - frac, power) + end;
      },
      "Polynomial(" + support::value_text(initial) + " -> " + support::value_text(end) +
          ", power " + support::value_text(power) + ")");
}

SchedulePtr exponential(double initial, std::int64_t total_iters, double decay_rate,
                        bool staircase) {
  require_finite("Exponential", {{"initial", initial}, {"decay_rate", decay_rate}});
  require(total_iters > 0, "Exponential", "total_iters must be > 0");
  require(decay_rate > 0, "Exponential", "decay_rate must be > 0");
  return make(
      [=](std::int64_t s) {
        double e = static_cast<double>(s) / static_cast<double>(total_iters);
        if (staircase) e = std::floor(e);
        return initial * std::pow(decay_rate, e);
      },
      "Exponential(" + support::value_text(initial) + ", rate " + support::value_text(decay_rate) +
          ")");
}

SchedulePtr inverse_exponential_time_decay(double initial, double step_exponent,
                                           std::int64_t total_iters, double decay_rate,
                                           bool staircase) {
  require_finite(
      "InverseExponentialTimeDecay",
      {{"initial", initial}, {"step_exponent", step_exponent}, {"decay_rate", decay_rate}});
  require(total_iters > 0, "InverseExponentialTimeDecay", "total_iters must be > 0");
  return make(
      [=](std::int64_t s) {
        double r =
            std::pow(static_cast<double>(s), step_exponent) / static_cast<double>(total_iters);
        if (staircase) r = std::floor(r);
        return initial / (1.0 + decay_rate * r);
      },
      "InverseExponentialTimeDecay(" + support::value_text(initial) + ")");
}

SchedulePtr inverse_square_root_decay(double initial, double scale, std::int64_t warmup_steps) {
  require_finite("InverseSquareRootDecay", {{"initial", initial}, {"scale", scale}});
  require(warmup_steps > 0, "InverseSquareRootDecay", "warmup_steps must be > 0");
  return make(
      [=](std::int64_t s) {
        return initial * scale / std::sqrt(static_cast<double>(std::max(s, warmup_steps)));
      },
      "InverseSquareRootDecay(" + support::value_text(initial) + ")");
}

SchedulePtr cosine_decay(double initial, double end, std::int64_t total_iters) {
  require_finite("CosineDecay", {{"initial", initial}, {"end", end}});
  require(total_iters > 0, "CosineDecay", "total_iters must be > 0");
  return make(
      [=](std::int64_t s) {
        const double frac =
            static_cast<double>(std::min(s, total_iters)) / static_cast<double>(total_iters);
        return end + (initial - end) * 0.5 * (1.0 + std::cos(kPi * frac));
      },
      "CosineDecay(" + support::value_text(initial) + " -> " + support::value_text(end) + " over " +
          std::to_string(total_iters) + ")");
}

SchedulePtr cosine_annealing(double initial, std::int64_t t_max, double eta_min) {
  require_finite("CosineAnnealing", {{"initial", initial}, {"eta_min", eta_min}});
  require(t_max > 0, "CosineAnnealing", "T_max must be > 0");
  return make(
      [=](std::int64_t s) {
        return eta_min +
               (initial - eta_min) *
                   (1.0 + std::cos(kPi * static_cast<double>(s) / static_cast<double>(t_max))) /
                   2.0;
      },
      "CosineAnnealing(" + support::value_text(initial) + ", T_max " + std::to_string(t_max) + ")");
}

SchedulePtr cosine_annealing_warm_restarts(double initial, std::int64_t t_0, std::int64_t t_mult,
                                           double eta_min) {
  require_finite("CosineAnnealingWarmRestarts", {{"initial", initial}, {"eta_min", eta_min}});
  require(t_0 > 0, "CosineAnnealingWarmRestarts", "T_0 must be > 0");
  require(t_mult >= 1, "CosineAnnealingWarmRestarts", "T_mult must be >= 1");
  return make(
      [=](std::int64_t s) {
        // Cycles of T_0 steps: the step's place in its cycle directly. Growing cycles: at most
        // 63 of them fit in the step's range; once the next one's length would overflow, the
        // step lies in it (the length then kept as a double).
        std::int64_t t_cur = s % t_0;
        double t_i = static_cast<double>(t_0);
        if (t_mult > 1) {
          std::int64_t cycle = t_0;
          t_cur = s;
          while (t_cur >= cycle) {
            t_cur -= cycle;
            if (cycle > std::numeric_limits<std::int64_t>::max() / t_mult) {
              t_i = static_cast<double>(cycle) * static_cast<double>(t_mult);
              break;
            }
            cycle *= t_mult;
            t_i = static_cast<double>(cycle);
          }
        }
        return eta_min +
               (initial - eta_min) * (1.0 + std::cos(kPi * static_cast<double>(t_cur) / t_i)) / 2.0;
      },
      "CosineAnnealingWarmRestarts(" + support::value_text(initial) + ", T_0 " +
          std::to_string(t_0) + ", T_mult " + std::to_string(t_mult) + ")");
}

SchedulePtr step_decay(double initial, std::int64_t step_size, double gamma) {
  require_finite("Step", {{"initial", initial}, {"gamma", gamma}});
  require(step_size > 0, "Step", "step_size must be > 0");
  return make(
      [=](std::int64_t s) { return initial * std::pow(gamma, static_cast<double>(s / step_size)); },
      "Step(" + support::value_text(initial) + ", every " + std::to_string(step_size) + " x" +
          support::value_text(gamma) + ")");
}

SchedulePtr multi_step(double initial, std::vector<std::int64_t> milestones, double gamma) {
  require_finite("MultiStep", {{"initial", initial}, {"gamma", gamma}});
  require(std::is_sorted(milestones.begin(), milestones.end()), "MultiStep",
          "milestones must be increasing");
  return make(
      [=](std::int64_t s) {
        const auto passed =
            std::upper_bound(milestones.begin(), milestones.end(), s) - milestones.begin();
        return initial * std::pow(gamma, static_cast<double>(passed));
      },
      "MultiStep(" + support::value_text(initial) + ")");
}

SchedulePtr multiplicative(double initial, double coefficient) {
  require_finite("Multiplicative", {{"initial", initial}, {"coefficient", coefficient}});
  return make(
      [=](std::int64_t s) { return initial * std::pow(coefficient, static_cast<double>(s)); },
      "Multiplicative(" + support::value_text(initial) + ", x" + support::value_text(coefficient) +
          ")");
}

SchedulePtr cyclic(double base_lr, double max_lr, std::int64_t step_size_up,
                   std::int64_t step_size_down, CyclicMode mode, double gamma) {
  require_finite("Cyclic", {{"base_lr", base_lr}, {"max_lr", max_lr}, {"gamma", gamma}});
  require(static_cast<std::size_t>(mode) < kCyclicModeNames.size(), "Cyclic",
          "mode " + std::to_string(static_cast<int>(mode)) + " is not a CyclicMode");
  require(step_size_up > 0, "Cyclic", "step_size_up must be > 0");
  const std::int64_t down = step_size_down > 0 ? step_size_down : step_size_up;
  const double total = static_cast<double>(step_size_up + down);
  const double ratio = static_cast<double>(step_size_up) / total;
  return make(
      [=](std::int64_t s) {
        const double cycle = std::floor(1.0 + static_cast<double>(s) / total);
        const double x = 1.0 + static_cast<double>(s) / total - cycle;
        const double scale_factor = x <= ratio ? x / ratio : (x - 1.0) / (ratio - 1.0);
        const double height = (max_lr - base_lr) * scale_factor;
        double f = 1.0;
        if (mode == CyclicMode::triangular2) f = 1.0 / std::pow(2.0, cycle - 1.0);
        if (mode == CyclicMode::exp_range) f = std::pow(gamma, static_cast<double>(s));
        return base_lr + height * f;
      },
      "Cyclic(" + support::value_text(base_lr) + " .. " + support::value_text(max_lr) + ", " +
          std::string(name_of(kCyclicModeNames, mode)) + ")");
}

SchedulePtr one_cycle(double max_lr, std::int64_t total_steps, double pct_start, Anneal anneal,
                      double div_factor, double final_div_factor, bool three_phase) {
  require_finite(
      "OneCycle",
      {{"max_lr", max_lr}, {"div_factor", div_factor}, {"final_div_factor", final_div_factor}});
  require(div_factor > 0 && final_div_factor > 0, "OneCycle",
          "div_factor and final_div_factor must be > 0 (got " + support::value_text(div_factor) +
              " and " + support::value_text(final_div_factor) + ")");
  require(static_cast<std::size_t>(anneal) < kAnnealNames.size(), "OneCycle",
          "anneal_strategy " + std::to_string(static_cast<int>(anneal)) + " is not an Anneal");
  require(total_steps > 0, "OneCycle", "total_steps must be > 0");
  require(pct_start > 0 && pct_start < 1, "OneCycle", "pct_start must be in (0, 1)");
  const double initial = max_lr / div_factor, final_lr = initial / final_div_factor;
  struct Phase {
    double end_step, start, end;
  };
  std::vector<Phase> phases;
  const double up = pct_start * static_cast<double>(total_steps) - 1.0;
  if (three_phase) {
    phases = {{up, initial, max_lr},
              {2 * pct_start * static_cast<double>(total_steps) - 2.0, max_lr, initial},
              {static_cast<double>(total_steps) - 1.0, initial, final_lr}};
  } else {
    phases = {{up, initial, max_lr}, {static_cast<double>(total_steps) - 1.0, max_lr, final_lr}};
  }
  const bool cos = anneal == Anneal::cos;
  return make(
      [=](std::int64_t s) {
        if (s >= total_steps) {
          throw Error("schedule OneCycle: step " + std::to_string(s) + " is past total_steps " +
                      std::to_string(total_steps));
        }
        double start_step = 0;
        for (std::size_t i = 0; i < phases.size(); ++i) {
          const Phase& p = phases[i];
          if (static_cast<double>(s) <= p.end_step || i + 1 == phases.size()) {
            const double pct = (static_cast<double>(s) - start_step) / (p.end_step - start_step);
            return cos ? p.end + (p.start - p.end) / 2.0 * (std::cos(kPi * pct) + 1.0)
                       : (p.end - p.start) * pct + p.start;
          }
          start_step = p.end_step;
        }
        return final_lr;
      },
      "OneCycle(max " + support::value_text(max_lr) + ", " + std::to_string(total_steps) +
          " steps)");
}

SchedulePtr sequential(std::vector<SchedulePtr> schedules, std::vector<std::int64_t> milestones) {
  require(!schedules.empty() && milestones.size() + 1 == schedules.size(), "Sequential",
          "needs one milestone fewer than schedules (got " + std::to_string(schedules.size()) +
              " schedules, " + std::to_string(milestones.size()) + " milestones)");
  require(std::is_sorted(milestones.begin(), milestones.end()), "Sequential",
          "milestones must be increasing");
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    require(schedules[i] != nullptr, "Sequential", "schedule " + std::to_string(i) + " is null");
  }
  std::string d = "Sequential(";
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    d += (i ? ", " : "") + schedules[i]->describe();
    if (i < milestones.size()) d += " until " + std::to_string(milestones[i]);
  }
  return make(
      [=](std::int64_t s) {
        const auto i = static_cast<std::size_t>(
            std::upper_bound(milestones.begin(), milestones.end(), s) - milestones.begin());
        const std::int64_t start = i == 0 ? 0 : milestones[i - 1];
        return schedules[i]->value(s - start);
      },
      d + ")");
}

SchedulePtr piecewise_constant(std::vector<double> values, std::vector<std::int64_t> boundaries) {
  require(values.size() == boundaries.size() + 1, "PiecewiseConstant",
          "needs one value more than boundaries");
  for (std::size_t i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "PiecewiseConstant",
            "value " + std::to_string(i) + " is " + support::value_text(values[i]) +
                " (expected a finite number)");
  }
  require(std::is_sorted(boundaries.begin(), boundaries.end()), "PiecewiseConstant",
          "boundaries must be increasing");
  return make(
      [=](std::int64_t s) {
        return values[static_cast<std::size_t>(
            std::upper_bound(boundaries.begin(), boundaries.end(), s) - boundaries.begin())];
      },
      "PiecewiseConstant");
}

SchedulePtr chained(std::vector<SchedulePtr> schedules) {
  require(!schedules.empty(), "Chained", "needs at least one schedule");
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    require(schedules[i] != nullptr, "Chained", "schedule " + std::to_string(i) + " is null");
  }
  for (std::size_t i = 1; i < schedules.size(); ++i) {
    require(schedules[i]->value(0) != 0.0, "Chained",
            "schedule " + std::to_string(i) + " is 0 at step 0, so it has no factor");
  }
  return make(
      [=](std::int64_t s) {
        double v = schedules[0]->value(s);
        for (std::size_t i = 1; i < schedules.size(); ++i) {
          v *= schedules[i]->value(s) / schedules[i]->value(0);
        }
        return v;
      },
      "Chained");
}

SchedulePtr scaled(SchedulePtr schedule, double factor) {
  require_finite("Scaled", {{"factor", factor}});
  require(schedule != nullptr, "Scaled", "needs a schedule");
  const std::string d = support::value_text(factor) + " x " + schedule->describe();
  return make(
      [s = std::move(schedule), factor](std::int64_t step) { return factor * s->value(step); }, d);
}

SchedulePtr lambda(std::function<double(std::int64_t)> fn, std::string description) {
  require(static_cast<bool>(fn), "Lambda", "needs a function");
  return make(std::move(fn), std::move(description));
}

}  // namespace mantissa::optim
