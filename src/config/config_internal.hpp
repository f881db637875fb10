#pragma once
// Internal: the parts of the config parser, one file each (config.cpp holds the top level).
#include <string>
#include <vector>

#include "mantissa/config/config.hpp"
#include "yaml_reader.hpp"

namespace mantissa::config::detail {

// config_legacy.cpp: moves the vendor's legacy precision keys (model.mixed_precision,
// model.use_bfloat16, model.fp16_type, runconfig.precision_opt_level and the optimizer's
// loss-scaling keys) to trainer.init.precision, adding one note per key moved.
void migrate_legacy_keys(YAML::Node& root, std::vector<std::string>& notes);

// config_optimizer.cpp: {Name: {learning_rate | lr, <the optimizer's fields>, params: [...]}}.
OptimizerConfig parse_optimizer(const YAML::Node& node, const std::string& path);

// config_precision.cpp: the MixedPrecision block (notes: tf_dynamic read as dynamic).
amp::MixedPrecision parse_precision(Reader r, std::vector<std::string>& notes);

// config_schedules.cpp: the schedulers list, with the rule that two schedulers driving one
// key need disjoint param_group_tags.
std::vector<SchedulerConfig> parse_schedulers(const YAML::Node& list, const std::string& path);

// config_schedule_classes.cpp: the scheduler classes and their parameters.
// What a scheduler's name says: the key it drives, and whether it is a ScalePerParam wrapper
// (an unknown or refused name throws, naming the names or the reason).
struct SchedulerName {
  ScheduledKey key;
  bool scale_per_param;
};
SchedulerName scheduler_name(const std::string& name, const std::string& path);
// The name of a {Name: {parameters}} node (anything else throws, listing the names).
std::string scheduler_node_name(const YAML::Node& node, const std::string& path);
// The schedule of class `name` (not a wrapper) from its parameters in `r`.
optim::SchedulePtr parse_schedule_class(const std::string& name, Reader& r,
                                        const std::string& path);
// A scheduler nested in another, driving `key`, without param_group_tags of its own.
optim::SchedulePtr parse_nested_schedule(const YAML::Node& node, const std::string& path,
                                         ScheduledKey key);

// config_loop.cpp: trainer.init.loop.
LoopConfig parse_loop(Reader r);

// config_dist.cpp: trainer.init.dist.
DistConfig parse_dist(Reader r);

}  // namespace mantissa::config::detail
