#pragma once
// Internal: the optimizer classes' shared shape, and their factories for the registry.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim::detail {

// An optimizer defined by its name, hyperparameters, state names and update function.
using UpdateFn =
    std::function<void(const std::function<double(const std::string&)>& hyper, float* p,
                       const float* g, std::vector<Tensor>& state, std::int64_t n, double lr,
                       double wd, std::int64_t step, const Variable& param)>;
using InitFn = std::function<Tensor(const std::string& state_name, const Variable& param,
                                    const std::function<double(const std::string&)>& hyper)>;
using StateNamesFn = std::function<std::vector<std::string>(const Variable& param)>;

struct Definition {
  std::string name;
  std::vector<HyperSpec> hyperparameters;
  StateNamesFn state_names;
  UpdateFn update;
  InitFn init;  // may be empty: zeros
};

std::vector<Definition> sgd_family();
std::vector<Definition> adam_family();
std::vector<Definition> adaptive_family();
std::vector<Definition> sign_and_factored_family();

inline StateNamesFn fixed_states(std::vector<std::string> names) {
  return [names](const Variable&) { return names; };
}

}  // namespace mantissa::optim::detail
