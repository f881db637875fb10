// libFuzzer harness: the YAML config with --set overrides. The input is YAML text, optionally
// followed by a line "%%" and one override (key.path=value) per line. Every input must end in
// a TrainerConfig or a mantissa::Error; anything else (a crash, a sanitizer report, another
// exception) is a finding. An input whose first line is "%%fifo" is read from a FIFO that no
// one writes (load_config on a named pipe): it must end in a mantissa::Error, never a hang.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"

namespace {

// The config read from a FIFO without a writer (open() would block forever without
// O_NONBLOCK): only a mantissa::Error may come back.
void load_from_a_fifo(const std::vector<std::string>& overrides) {
  const std::string path = "/tmp/mantissa-fuzz-fifo-" + std::to_string(::getpid());
  ::unlink(path.c_str());
  if (::mkfifo(path.c_str(), 0600) != 0) return;
  try {
    mantissa::config::load_config(path, overrides);
  } catch (const mantissa::Error&) {
  }
  ::unlink(path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (input.rfind("%%fifo\n", 0) == 0) {
    load_from_a_fifo({});
    return 0;
  }
  const std::size_t cut = input.find("\n%%\n");
  const std::string yaml = input.substr(0, cut);
  std::vector<std::string> overrides;
  if (cut != std::string::npos) {
    std::string rest = input.substr(cut + 4);
    for (std::size_t at = 0; at <= rest.size();) {
      const std::size_t end = std::min(rest.find('\n', at), rest.size());
      overrides.push_back(rest.substr(at, end - at));
      at = end + 1;
    }
  }
  try {
    mantissa::config::parse_config(yaml, overrides, "fuzz");
  } catch (const mantissa::Error&) {
  }
  return 0;
}
