#pragma once
// Runs this program again as a child process (`mantissa compare` trains each format in its
// own process: its own peak memory, its own progress line on the shared terminal).
#include <string>
#include <vector>

namespace mantissa::app {

struct ChildResult {
  int exit_status = 0;       // the child's, or 128 + signal when a signal ended it
  bool interrupted = false;  // a stop signal reached this process while the child ran
};

// Runs `mantissa <args...>` (this executable) with the same stdin, stdout and stderr, in a
// process group of its own, and waits for it. SIGINT, SIGTERM or SIGHUP reaching this process
// (to it alone or to its group) is passed to the child once (it checkpoints and exits) and
// reported here instead of ending this process. Throws mantissa::Error when the child cannot
// start.
ChildResult run_self(const std::vector<std::string>& args);

}  // namespace mantissa::app
