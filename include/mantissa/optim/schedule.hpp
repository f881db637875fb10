#pragma once
// Schedules: learning rate (or weight decay) as a pure function of the global optimizer step
// (the vendor's static-graph rule). The optimizer step with index k (from 0) uses value(k).
// Parameter names follow the vendor's system (initial_learning_rate, end_learning_rate,
// total_iters, ...). Constructors validate and throw mantissa::Error naming the parameter.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/names.hpp"

namespace mantissa::optim {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double value(std::int64_t step) const = 0;
  virtual std::string describe() const = 0;
};
using SchedulePtr = std::shared_ptr<const Schedule>;

SchedulePtr constant(double value);
// initial + (end - initial) * min(step, total_iters) / total_iters
SchedulePtr linear(double initial, double end, std::int64_t total_iters);
// (initial - end) * (1 - min(step, T)/T)^power + end; with cycle, T grows to the next
// multiple of total_iters at or above step.
SchedulePtr polynomial(double initial, double end, std::int64_t total_iters, double power = 1.0,
                       bool cycle = false);
// initial * decay_rate^(step / total_iters) (floored exponent with staircase)
SchedulePtr exponential(double initial, std::int64_t total_iters, double decay_rate,
                        bool staircase = false);
// initial / (1 + decay_rate * step^step_exponent / total_iters) (floored ratio with staircase)
SchedulePtr inverse_exponential_time_decay(double initial, double step_exponent,
                                           std::int64_t total_iters, double decay_rate,
                                           bool staircase = false);
// initial * scale / sqrt(max(step, warmup_steps))
SchedulePtr inverse_square_root_decay(double initial = 1.0, double scale = 1.0,
                                      std::int64_t warmup_steps = 1);
// end + (initial - end) * (1 + cos(pi * min(step, T) / T)) / 2
SchedulePtr cosine_decay(double initial, double end, std::int64_t total_iters);
// eta_min + (initial - eta_min) * (1 + cos(pi * step / T_max)) / 2 (periodic, as PyTorch's
// closed form)
SchedulePtr cosine_annealing(double initial, std::int64_t t_max, double eta_min = 0.0);
// Cosine annealing restarted after T_0 steps, then T_0*T_mult, T_0*T_mult^2, ...
SchedulePtr cosine_annealing_warm_restarts(double initial, std::int64_t t_0,
                                           std::int64_t t_mult = 1, double eta_min = 0.0);
// initial * gamma^floor(step / step_size)
SchedulePtr step_decay(double initial, std::int64_t step_size, double gamma = 0.1);
// initial * gamma^(number of milestones <= step)
SchedulePtr multi_step(double initial, std::vector<std::int64_t> milestones, double gamma = 0.1);
// initial * coefficient^step
SchedulePtr multiplicative(double initial, double coefficient);
// PyTorch CyclicLR's modes: the height of each cycle is constant (triangular), halves per
// cycle (triangular2) or is scaled by gamma^step (exp_range).
enum class CyclicMode { triangular, triangular2, exp_range };
inline constexpr NameTable<CyclicMode, 3> kCyclicModeNames = {{
    {"triangular", CyclicMode::triangular},
    {"triangular2", CyclicMode::triangular2},
    {"exp_range", CyclicMode::exp_range},
}};
static_assert(in_enum_order(kCyclicModeNames, static_cast<std::size_t>(CyclicMode::exp_range) + 1));
SchedulePtr cyclic(double base_lr, double max_lr, std::int64_t step_size_up,
                   std::int64_t step_size_down = 0, CyclicMode mode = CyclicMode::triangular,
                   double gamma = 1.0);
// OneCycle's annealing between phase ends: half a cosine, or a straight line.
enum class Anneal { cos, linear };
inline constexpr NameTable<Anneal, 2> kAnnealNames = {
    {{"cos", Anneal::cos}, {"linear", Anneal::linear}}};
static_assert(in_enum_order(kAnnealNames, static_cast<std::size_t>(Anneal::linear) + 1));
// PyTorch OneCycleLR, with initial = max_lr / div_factor and final = initial /
// final_div_factor; three_phase as PyTorch.
SchedulePtr one_cycle(double max_lr, std::int64_t total_steps, double pct_start = 0.3,
                      Anneal anneal = Anneal::cos, double div_factor = 25.0,
                      double final_div_factor = 1e4, bool three_phase = false);
// schedules[i] runs on [milestones[i-1], milestones[i]) and sees step - milestones[i-1].
SchedulePtr sequential(std::vector<SchedulePtr> schedules, std::vector<std::int64_t> milestones);
// values[i] on [boundaries[i-1], boundaries[i]); values.size() == boundaries.size() + 1.
SchedulePtr piecewise_constant(std::vector<double> values, std::vector<std::int64_t> boundaries);
// The first schedule's value times every other schedule's factor value(step) / value(0).
SchedulePtr chained(std::vector<SchedulePtr> schedules);
// factor * schedule(step): a parameter group's share of a schedule (ScalePerParamLR and
// adjust_learning_rate, for muP).
SchedulePtr scaled(SchedulePtr schedule, double factor);
// Any function of the step.
SchedulePtr lambda(std::function<double(std::int64_t)> fn, std::string description = "lambda");

// The schedule classes of the vendor's system, one per factory above (lambda aside): the
// config's scheduler registry has one entry per kind, checked at compile time.
enum class ScheduleKind {
  constant,
  linear,
  polynomial,
  exponential,
  inverse_exponential_time_decay,
  inverse_square_root_decay,
  cosine_decay,
  cosine_annealing,
  cosine_annealing_warm_restarts,
  step_decay,
  multi_step,
  multiplicative,
  cyclic,
  one_cycle,
  sequential,
  piecewise_constant,
  chained,
};
inline constexpr std::size_t kScheduleKindCount = 17;

}  // namespace mantissa::optim
