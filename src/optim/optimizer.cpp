#include "mantissa/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "mantissa/error.hpp"

namespace mantissa::optim {

std::string parameter_name(const ParamGroup& group, std::size_t g, std::size_t i) {
  return group.names.empty() ? "group" + std::to_string(g) + ".param" + std::to_string(i)
                             : group.names[i];
}

Optimizer::Optimizer(OptimizerSettings settings, std::vector<ParamGroup> groups)
    : settings_(std::move(settings)), groups_(std::move(groups)) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    if (!group.learning_rate) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has no learning rate");
    }
    if (!group.names.empty() && group.names.size() != group.params.size()) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has " +
                  std::to_string(group.names.size()) + " names for " +
                  std::to_string(group.params.size()) + " parameters");
    }
  }
}

std::vector<Tensor>& Optimizer::state_for(Variable& p, std::size_t g) {
  auto& s = state_[p.value().raw_data()];
  if (s.empty()) {
    const std::size_t n = state_names(p, g).size();
    for (std::size_t k = 0; k < n; ++k) s.push_back(init_state(k, p, g));
  }
  return s;
}

void Optimizer::check_values(std::size_t g, std::int64_t k) const {
  const ParamGroup& group = groups_[g];
  for (const auto& [what, schedule] : {std::pair{"learning rate", group.learning_rate.get()},
                                       std::pair{"weight decay", group.weight_decay.get()}}) {
    if (schedule == nullptr) continue;
    const double v = schedule->value(k);
    if (!(std::isfinite(v) && v >= 0)) {
      std::ostringstream text;
      text << v;
      throw Error("optimizer " + name() + ": the " + what + " of parameter group " +
                  std::to_string(g) + " at step " + std::to_string(k) + " is " + text.str() + " (" +
                  schedule->describe() + "); it must be a finite number >= 0");
    }
  }
}

void Optimizer::check_schedules(std::int64_t steps) const {
  constexpr std::int64_t kMostChecked = 100000;  // beyond that, evenly spaced steps
  const std::int64_t stride = std::max<std::int64_t>(1, steps / kMostChecked);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::int64_t k = step_; k < steps; k += stride) check_values(g, k);
    if (steps > step_) check_values(g, steps - 1);
  }
}

void Optimizer::step() {
  // Every group's values are checked before any parameter moves: no half-applied step.
  for (std::size_t g = 0; g < groups_.size(); ++g) check_values(g, step_);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    const double lr = group.learning_rate->value(step_);
    const double wd = group.weight_decay->value(step_);
    for (Variable& p : group.params) {
      if (!p.grad().defined()) continue;
      std::vector<Tensor>& s = state_for(p, g);
      update(p, s, g, lr, wd, step_ + 1);
      p.bump_version();
    }
  }
  ++step_;
}

void Optimizer::zero_grad() {
  for (ParamGroup& group : groups_) {
    for (Variable& p : group.params) p.zero_grad();
  }
}

double Optimizer::current_learning_rate(std::size_t g) const {
  return groups_.at(g).learning_rate->value(step_);
}

std::vector<Variable> Optimizer::parameters() const {
  std::vector<Variable> out;
  for (const ParamGroup& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

std::map<std::string, Tensor> Optimizer::state_tensors() const {
  std::map<std::string, Tensor> out;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Variable& p = groups_[g].params[i];
      auto it = state_.find(p.value().raw_data());
      if (it == state_.end()) continue;
      const std::vector<std::string> names = state_names(p, g);
      for (std::size_t k = 0; k < names.size(); ++k) {
        out[parameter_name(groups_[g], g, i) + "." + names[k]] = it->second[k];
      }
    }
  }
  return out;
}

void Optimizer::load_state_tensors(const std::map<std::string, Tensor>& state,
                                   std::int64_t step_index) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      Variable& p = groups_[g].params[i];
      const std::string pname = parameter_name(groups_[g], g, i);
      const std::vector<std::string> names = state_names(p, g);
      std::vector<Tensor> tensors;
      for (const std::string& n : names) {
        auto it = state.find(pname + "." + n);
        if (it != state.end()) tensors.push_back(it->second.to(numerics::Format::float32).clone());
      }
      if (tensors.empty()) continue;  // this parameter had not been stepped yet
      if (tensors.size() != names.size()) {
        throw Error("optimizer " + name() + ": state of '" + pname + "' is incomplete (" +
                    std::to_string(tensors.size()) + " of " + std::to_string(names.size()) +
                    " tensors)");
      }
      state_[p.value().raw_data()] = tensors;
    }
  }
  step_ = step_index;
}

}  // namespace mantissa::optim
