#include "run_config.hpp"

#include <filesystem>

#include "mantissa/error.hpp"

namespace mantissa::app {

config::TrainerConfig load_run_config(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  config::TrainerConfig c = config::load_config(path, overrides);
  if (c.checkpoint.dir.empty()) {
    // The config's name without its extension; a name that is dots alone ("...yaml" has the
    // stem "..") would put the run in runs/ itself or in the working directory.
    const std::string stem = std::filesystem::path(path).stem().string();
    if (stem.find_first_not_of('.') == std::string::npos) {
      throw Error(path +
                  ": a config named by dots alone gives no run directory name; set "
                  "trainer.init.checkpoint.dir");
    }
    c.checkpoint.dir = "runs/" + stem;
  }
  return c;
}

}  // namespace mantissa::app
