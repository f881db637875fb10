#pragma once
#include <string>

#include "mantissa/optim/schedule.hpp"
#include "yaml_reader.hpp"

namespace mantissa::train::detail {
optim::SchedulePtr parse_schedule(const YAML::Node& node, const std::string& path);
}  // namespace mantissa::train::detail
