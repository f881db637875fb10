#include "mantissa/optim/optimizer.hpp"

#include <cstring>

#include "mantissa/error.hpp"

namespace mantissa::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::vector<HyperSpec> specs)
    : groups_(std::move(groups)), specs_(std::move(specs)) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    if (!group.learning_rate) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has no learning rate");
    }
    for (const auto& [key, value] : group.hyperparameters) {
      bool known = false;
      std::string allowed;
      for (const HyperSpec& s : specs_) {
        known = known || s.name == key;
        allowed += (allowed.empty() ? "" : ", ") + s.name;
      }
      if (!known) {
        throw Error("optimizer: unknown hyperparameter '" + key + "' (expected one of: " + allowed +
                    ")");
      }
      (void)value;
    }
    if (!group.weight_decay) {
      bool has_weight_decay = false;
      for (const HyperSpec& s : specs_)
        has_weight_decay = has_weight_decay || s.name == "weight_decay";
      group.weight_decay = constant(has_weight_decay ? hyper(group, "weight_decay") : 0.0);
    }
    if (!group.names.empty() && group.names.size() != group.params.size()) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has " +
                  std::to_string(group.names.size()) + " names for " +
                  std::to_string(group.params.size()) + " parameters");
    }
  }
}

double Optimizer::hyper(const ParamGroup& group, const std::string& name) const {
  auto it = group.hyperparameters.find(name);
  if (it != group.hyperparameters.end()) return it->second;
  for (const HyperSpec& s : specs_) {
    if (s.name == name) return s.default_value;
  }
  throw Error("optimizer: no hyperparameter '" + name + "'");
}

Tensor Optimizer::init_state(const std::string&, const Variable& param, const ParamGroup&) const {
  return Tensor::zeros(param.shape());
}

std::vector<Tensor>& Optimizer::state_for(Variable& p, const ParamGroup& group) {
  auto& s = state_[p.value().raw_data()];
  if (s.empty()) {
    for (const std::string& n : state_names(p)) s.push_back(init_state(n, p, group));
  }
  return s;
}

void Optimizer::step() {
  for (ParamGroup& group : groups_) {
    const double lr = group.learning_rate->value(step_);
    const double wd = group.weight_decay->value(step_);
    for (Variable& p : group.params) {
      if (!p.grad().defined()) continue;
      std::vector<Tensor>& s = state_for(p, group);
      update(p, s, group, lr, wd, step_ + 1);
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

std::string Optimizer::param_name(std::size_t g, std::size_t i) const {
  const ParamGroup& group = groups_[g];
  return group.names.empty() ? "group" + std::to_string(g) + ".param" + std::to_string(i)
                             : group.names[i];
}

std::map<std::string, Tensor> Optimizer::state_tensors() const {
  std::map<std::string, Tensor> out;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Variable& p = groups_[g].params[i];
      auto it = state_.find(p.value().raw_data());
      if (it == state_.end()) continue;
      const std::vector<std::string> names = state_names(p);
      for (std::size_t k = 0; k < names.size(); ++k) {
        out[param_name(g, i) + "." + names[k]] = it->second[k];
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
      const std::vector<std::string> names = state_names(p);
      std::vector<Tensor> tensors;
      for (const std::string& n : names) {
        auto it = state.find(param_name(g, i) + "." + n);
        if (it != state.end()) tensors.push_back(it->second.to(numerics::Format::float32).clone());
      }
      if (tensors.empty()) continue;  // this parameter had not been stepped yet
      if (tensors.size() != names.size()) {
        throw Error("optimizer " + name() + ": state of '" + param_name(g, i) +
                    "' is incomplete (" + std::to_string(tensors.size()) + " of " +
                    std::to_string(names.size()) + " tensors)");
      }
      state_[p.value().raw_data()] = tensors;
    }
  }
  step_ = step_index;
}

}  // namespace mantissa::optim
