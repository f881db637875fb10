#include "child_process.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "mantissa/error.hpp"

extern char** environ;

namespace mantissa::app {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void note_interrupt(int) {
  g_interrupted = 1;
}

}  // namespace

ChildResult run_self(const std::vector<std::string>& args) {
  // /proc/self/exe runs this very program, even when a rebuild has replaced its file since.
  const char* self = "/proc/self/exe";
  std::vector<std::string> owned{"mantissa"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);

  g_interrupted = 0;
  struct sigaction on_int {};
  on_int.sa_handler = note_interrupt;
  sigemptyset(&on_int.sa_mask);
  struct sigaction previous {};
  sigaction(SIGINT, &on_int, &previous);  // the child (same process group) gets Ctrl-C too
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    sigaction(SIGINT, &previous, nullptr);
    throw Error(std::string("cannot start this program again (") + self +
                "): " + std::strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &previous, nullptr);
  ChildResult r;
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.interrupted = g_interrupted != 0;
  return r;
}

}  // namespace mantissa::app
