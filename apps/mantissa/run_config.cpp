#include "run_config.hpp"

#include <filesystem>

namespace mantissa::app {

train::TrainerConfig load_run_config(const std::string& path,
                                     const std::vector<std::string>& overrides) {
  train::TrainerConfig c = train::load_config(path, overrides);
  if (c.checkpoint.dir.empty()) {
    c.checkpoint.dir = "runs/" + std::filesystem::path(path).stem().string();
  }
  return c;
}

}  // namespace mantissa::app
