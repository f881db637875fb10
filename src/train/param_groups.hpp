#pragma once
// Internal: the optimizer's parameter groups from the config: the optimizer's `params`
// entries (globs over parameter names, tags, per-group settings, adjust_learning_rate) and
// the schedulers (param_group_tags), with the vendor's rules.
#include <string>
#include <utility>
#include <vector>

#include "mantissa/config/config.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::train {

// Parameters matched by the same set of `params` entries form one group (in order of first
// appearance; those matched by none form a group without tags). Each group's learning rate is
// the learning-rate scheduler that applies to it (else optimizer.learning_rate), times its
// adjust_learning_rate; its weight decay the weight-decay scheduler that applies (else its
// settings'). Throws mantissa::Error when an entry matches no parameter, a tagged scheduler
// applies to no group, or two schedulers drive one key of one group.
std::vector<optim::ParamGroup> build_param_groups(
    const config::TrainerConfig& config,
    const std::vector<std::pair<std::string, autograd::Variable>>& named_parameters);

}  // namespace mantissa::train
