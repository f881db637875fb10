#pragma once
// Optimizers over parameter groups. Each group has its parameters, tags, a learning-rate
// schedule, an optional weight-decay schedule, and optionally its own settings; the optimizer
// step with index k (from 0) uses the schedules' value(k). State tensors are float32.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/optim/optimizer_settings.hpp"
#include "mantissa/optim/schedule.hpp"
#include "mantissa/optim/training_state.hpp"

namespace mantissa::optim {

using autograd::Variable;
using tensor::Tensor;

struct ParamGroup {
  std::vector<Variable> params;
  std::vector<std::string> names;  // one per parameter (for state and messages); may be empty
  std::vector<std::string> tags;
  SchedulePtr learning_rate;  // required
  SchedulePtr weight_decay;   // unset: the settings' weight_decay, constant (0 without one)
  // This group's own settings (the same optimizer as make_optimizer's); unset: those.
  std::optional<OptimizerSettings> settings;
};

// The name of parameter i of group g: its entry in group.names, else "group<g>.param<i>".
std::string parameter_name(const ParamGroup& group, std::size_t g, std::size_t i);

// What Optimizer::step() does with an update whose result is not finite.
enum class NonFiniteUpdate {
  refuse,  // keep the weights and state as they were (the default)
  apply,   // keep the non-finite result (for experiments: precision.on_nonfinite apply)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  std::string name() const { return std::string(optimizer_name(settings_)); }
  const OptimizerSettings& settings() const { return settings_; }

  // One update of every parameter that has a gradient, with lr = learning_rate(k) and
  // wd = weight_decay(k) for the current step index k; then k += 1. Parameters' versions
  // are bumped (their cached half copies are remade on next use). Returns whether the update
  // was applied: with NonFiniteUpdate::refuse (the default), an update that would leave inf
  // or NaN in any weight or optimizer state tensor (a learning rate of 1e300, eps 0, a state
  // that went negative) is not applied: every weight, state tensor and the step index stay
  // as they were, and refused_tensor() names the first tensor that would have been
  // non-finite ("<param name>" or "<param name>.<state name>").
  bool step(NonFiniteUpdate on_nonfinite = NonFiniteUpdate::refuse);
  const std::string& refused_tensor() const { return refused_; }
  void zero_grad();

  // The formats of the weights and the optimizer state (optim/training_state.hpp). Setting it
  // converts every parameter to the weight format (and its gradient with it); call it before
  // the first step.
  void set_training_state(const TrainingState& t);
  const TrainingState& training_state() const { return training_; }
  // Bytes of optimizer state (moments, compensation buffers) held now.
  std::int64_t state_bytes() const;

  std::int64_t step_index() const { return step_; }
  // The learning rate the next step uses, for group g.
  double current_learning_rate(std::size_t g = 0) const;
  // The learning rate step k (0-based) uses, for group g.
  double learning_rate_at(std::int64_t k, std::size_t g = 0) const;
  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Every group's parameters, in order.
  std::vector<Variable> parameters() const;

  // State out and in: "<param name>.<state name>" -> float32 tensor, plus the step index.
  // Loading checks every tensor: finite, and >= 0 where the state is a sum of squares or a
  // step size (exp_avg_sq, sum, square_avg, ...); mantissa::Error names the tensor otherwise.
  std::map<std::string, Tensor> state_tensors() const;
  void load_state_tensors(const std::map<std::string, Tensor>& state, std::int64_t step_index);
  void set_step_index(std::int64_t k) { step_ = k; }
  // Checks the learning rate and weight decay every group's schedules give at the steps from
  // step_index() to `steps` - 1 (every step up to 100,000 of them, else evenly spaced ones
  // and the last): each must be a finite number >= 0 (PyTorch's rule). A run calls it before
  // its first step; step() checks its own step's values too.
  void check_schedules(std::int64_t steps) const;

 protected:
  Optimizer(OptimizerSettings settings, std::vector<ParamGroup> groups);
  // Updates one parameter of group g. `state` holds its tensors in the order of
  // state_names(param, g), made by init_state on first use.
  virtual void update(Variable& param, std::vector<Tensor>& state, std::size_t g, double lr,
                      double wd, std::int64_t step_number) = 0;
  virtual std::vector<std::string> state_names(const Variable& param, std::size_t g) const = 0;
  virtual Tensor init_state(std::size_t index, const Variable& param, std::size_t g) const = 0;
  // Whether group g's update is elementwise: each element's new value and state depend on
  // that element alone and every state tensor has the parameter's shape. A guarded step then
  // copies, updates and checks a parameter in cache-sized ranges (update_range) instead of
  // in three passes over the whole of it.
  virtual bool elementwise(std::size_t g) const;
  // update() of elements [begin, end) only; called only where elementwise(g).
  virtual void update_range(Variable& param, std::vector<Tensor>& state, std::size_t g, double lr,
                            double wd, std::int64_t step_number, std::int64_t begin,
                            std::int64_t end);

 private:
  OptimizerSettings settings_;
  std::vector<ParamGroup> groups_;
  std::int64_t step_ = 0;
  std::map<const void*, std::vector<Tensor>> state_;  // keyed by the parameter
  std::vector<Tensor>& state_for(Variable& p, std::size_t g);
  void check_values(std::size_t g, std::int64_t k) const;
  TrainingState training_;
  std::map<const void*, Tensor> kahan_;  // bfloat16_kahan: each parameter's compensation
  std::string refused_;                  // the tensor the last refused step would have spoiled
  class UpdateSnapshot;                  // what a guarded step changed, copied before
  std::shared_ptr<UpdateSnapshot> snapshot_;
  // The weight or first state tensor of parameter i of group g holding a non-finite value,
  // by name; empty when all are finite.
  std::string nonfinite_tensor(std::size_t g, std::size_t i);
  // The update of a float32 parameter of an elementwise group, in ranges spread over the
  // threads; guarded, each range's values are first copied into the snapshot and checked
  // after their update while in cache. False when a value came out non-finite (the snapshot
  // then holds the whole parameter as it was); always true unguarded.
  bool update_in_ranges(Variable& p, std::vector<Tensor>& s, std::size_t g, double lr, double wd,
                        std::int64_t step_number, bool guarded);
  // One update of p through float32 copies of p, its gradient and its state (low-precision
  // weights or state); `index` numbers the parameter for the stochastic rounding stream.
  void staged_update(Variable& p, std::vector<Tensor>& s, std::size_t g, double lr, double wd,
                     std::int64_t index);
};

// Builds the optimizer `settings` name (Sgd, AdamW, ...): validates the settings (and each
// group's own) once, throwing mantissa::Error "optimizer <name>: <field>: ..." when a value
// is out of range.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& settings,
                                          std::vector<ParamGroup> groups);
// One group of `params` at a constant learning rate (PyTorch's `AdamW(model.parameters(),
// lr=1e-3)`): make_optimizer(AdamW{}, model.parameters(), 1e-3).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& settings,
                                          std::vector<Variable> params, double learning_rate);

}  // namespace mantissa::optim
