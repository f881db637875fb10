#pragma once
// Internal: the parts of the config parser, one file each (config.cpp holds the top level).
#include <string>
#include <vector>

#include "mantissa/train/config.hpp"
#include "yaml_reader.hpp"

namespace mantissa::train::detail {

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

// config_loop.cpp: trainer.init.loop.
LoopConfig parse_loop(Reader r);

}  // namespace mantissa::train::detail
