#pragma once
// Internal to the optimizers: the checks Optimizer makes of what a caller hands it (its
// parameter list, a loaded state), kept apart from the update.
#include <string>
#include <vector>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim::detail {

// Every parameter defined and listed once, every name once. Throws mantissa::Error naming the
// positions otherwise.
void check_parameter_list(const std::vector<ParamGroup>& groups);

// The loaded state tensor `t` named `full` (state `name` of an optimizer named `optimizer`):
// finite, and >= 0 where the state is a sum of squares, a running maximum or a step size.
void check_loaded_state(const Tensor& t, const std::string& full, const std::string& name,
                        const std::string& optimizer);

}  // namespace mantissa::optim::detail
