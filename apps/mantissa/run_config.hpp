#pragma once
// A config as `mantissa train` runs it (and mantissa.train in Python).
#include <string>
#include <vector>

#include "mantissa/config/config.hpp"

namespace mantissa::app {

// config::load_config(path, overrides), with the run directory runs/<config file's stem> when
// the config names none. Throws mantissa::Error as load_config does.
config::TrainerConfig load_run_config(const std::string& path,
                                      const std::vector<std::string>& overrides);

}  // namespace mantissa::app
