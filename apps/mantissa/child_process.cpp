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

// The stop signals a training run takes (train_command.cpp): each one this process gets while
// a child runs is passed to the child, once. The child runs in its own process group, so a
// signal to this process's group (Ctrl-C at the terminal, `timeout`, `kill -- -PGID`) reaches
// it only through here, as does one sent to this process alone (`kill PID`, docker, systemd):
// either way it gets exactly one and checkpoints (a second would end it at once).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t g_signal = 0;
volatile pid_t g_child = 0;
extern "C" void pass_to_child(int signo) {
  g_signal = signo;
  if (g_child > 0) kill(g_child, signo);  // kill is async-signal-safe
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

  // The stop signals are held while the child starts, so none can arrive before its pid is
  // known; the child starts with none held and in a process group of its own.
  sigset_t stops, held;
  sigemptyset(&stops);
  for (int s : kStopSignals) sigaddset(&stops, s);
  sigprocmask(SIG_BLOCK, &stops, &held);
  g_signal = 0;
  g_child = 0;
  struct sigaction pass {};
  pass.sa_handler = pass_to_child;
  pass.sa_mask = stops;  // one at a time
  struct sigaction previous[3]{};
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &pass, &previous[i]);
  const auto restore = [&] {
    g_child = 0;
    for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &previous[i], nullptr);
    sigprocmask(SIG_SETMASK, &held, nullptr);
  };
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  // A process group of its own is a background group at the terminal: with `stty tostop` its
  // progress lines would stop it (SIGTTOU). An ignored signal stays ignored across exec, so
  // the child is started with SIGTTOU ignored and writes as the foreground would.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction ttou {};
  sigaction(SIGTTOU, &ignore, &ttou);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self, nullptr, &attr, argv.data(), environ);
  sigaction(SIGTTOU, &ttou, nullptr);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    restore();
    throw Error(std::string("cannot start this program again (") + self +
                "): " + std::strerror(rc));
  }
  g_child = pid;
  sigprocmask(SIG_UNBLOCK, &stops, nullptr);  // a signal held meanwhile is passed on now
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  restore();
  ChildResult r;
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.interrupted = g_signal != 0;
  return r;
}

}  // namespace mantissa::app
