#include "run_config.hpp"

#include <filesystem>

namespace mantissa::app {

config::TrainerConfig load_run_config(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  config::TrainerConfig c = config::load_config(path, overrides);
  if (c.checkpoint.dir.empty()) {
    c.checkpoint.dir = "runs/" + std::filesystem::path(path).stem().string();
  }
  return c;
}

}  // namespace mantissa::app
