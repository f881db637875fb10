#include "mantissa/nn/module.hpp"

#include "mantissa/error.hpp"

namespace mantissa::nn {

Variable Module::register_parameter(const std::string& name, Tensor value) {
  Variable v(std::move(value), true);
  params_.emplace_back(name, v);
  return v;
}

void Module::for_each_module(const std::function<void(const std::string&, Module&)>& fn) {
  visit("", fn);
}

void Module::name_layers() {
  for_each_module([](const std::string& name, Module& m) {
    m.layer_ = name.empty() ? nullptr : std::make_shared<const std::string>(name);
  });
}

void Module::visit(const std::string& name,
                   const std::function<void(const std::string&, Module&)>& fn) {
  fn(name, *this);
  for (const auto& [child_name, child] : children_) {
    child->visit(name.empty() ? child_name : name + "." + child_name, fn);
  }
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Variable>>& out) const {
  for (const auto& [name, v] : params_) out.emplace_back(prefix + name, v);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  collect("", out);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, v] : named_parameters()) out.push_back(v);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const Variable& v : parameters()) n += v.value().numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, v] : named_parameters()) out[name] = v.value();
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state) {
  const auto named = named_parameters();
  for (auto [name, v] : named) {
    auto it = state.find(name);
    if (it == state.end()) throw Error("load_state_dict: missing parameter '" + name + "'");
    if (!(it->second.shape() == v.shape())) {
      throw Error("load_state_dict: parameter '" + name + "' has shape " +
                  it->second.shape().to_string() + ", expected " + v.shape().to_string());
    }
    v.mutable_value().copy_from(it->second);
    v.bump_version();
  }
  if (state.size() != named.size()) {
    for (const auto& [key, t] : state) {
      bool known = false;
      for (const auto& [name, v] : named) known = known || name == key;
      if (!known) throw Error("load_state_dict: unexpected parameter '" + key + "'");
    }
  }
}

}  // namespace mantissa::nn
