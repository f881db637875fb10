#pragma once
// Optimizers over parameter groups. Each group has its parameters, tags, a learning-rate
// schedule, an optional weight-decay schedule, and hyperparameter overrides; the optimizer
// step with index k (from 0) uses the schedules' value(k). State tensors are float32.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/optim/schedule.hpp"

namespace mantissa::optim {

using autograd::Variable;
using tensor::Tensor;

struct ParamGroup {
  std::vector<Variable> params;
  std::vector<std::string> names;  // one per parameter (for state and messages); may be empty
  std::vector<std::string> tags;
  SchedulePtr learning_rate;                      // required
  SchedulePtr weight_decay;                       // unset: the `weight_decay` hyperparameter
  std::map<std::string, double> hyperparameters;  // overrides of the optimizer's defaults
};

// One hyperparameter an optimizer understands, with its default.
struct HyperSpec {
  std::string name;
  double default_value;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;

  // One update of every parameter that has a gradient, with lr = learning_rate(k) and
  // wd = weight_decay(k) for the current step index k; then k += 1. Parameters' versions
  // are bumped (their cached half copies are remade on next use).
  void step();
  void zero_grad();

  std::int64_t step_index() const { return step_; }
  // The learning rate the next step uses, for group g.
  double current_learning_rate(std::size_t g = 0) const;
  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }

  // State out and in: "<param name>.<state name>" -> float32 tensor, plus the step index.
  std::map<std::string, Tensor> state_tensors() const;
  void load_state_tensors(const std::map<std::string, Tensor>& state, std::int64_t step_index);
  void set_step_index(std::int64_t k) { step_ = k; }

 protected:
  Optimizer(std::vector<ParamGroup> groups, std::vector<HyperSpec> specs);
  // Updates one parameter. `state` holds this parameter's tensors in the order of
  // state_names(), created zero-filled (or by init_state) on first use.
  virtual void update(Variable& param, std::vector<Tensor>& state, const ParamGroup& group,
                      double lr, double wd, std::int64_t step_number) = 0;
  virtual std::vector<std::string> state_names(const Variable& param) const = 0;
  // Initial values of a fresh state tensor (default zeros).
  virtual Tensor init_state(const std::string& state_name, const Variable& param,
                            const ParamGroup& group) const;
  // Value of a hyperparameter for a group (override or default).
  double hyper(const ParamGroup& group, const std::string& name) const;

 private:
  std::vector<ParamGroup> groups_;
  std::vector<HyperSpec> specs_;
  std::int64_t step_ = 0;
  std::map<const void*, std::vector<Tensor>> state_;  // keyed by the parameter
  std::string param_name(std::size_t g, std::size_t i) const;
  std::vector<Tensor>& state_for(Variable& p, const ParamGroup& group);
};

// Builds an optimizer by name: sgd, adam, adamw, adamax, adagrad, adadelta, rmsprop, lamb,
// lion, nadam, radam, rprop, asgd, adafactor. Unknown names and unknown hyperparameter
// names throw mantissa::Error listing what is allowed.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups);
// The hyperparameters (with defaults) of an optimizer, for documentation and validation.
std::vector<HyperSpec> optimizer_hyperparameters(const std::string& name);
std::vector<std::string> optimizer_names();

}  // namespace mantissa::optim
