#include "process_setup.hpp"

#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "mantissa/kernels/amx_pairs.hpp"
#include "mantissa/kernels/openmp_teams.hpp"

namespace mantissa::app {

void open_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() takes the lowest free number: this one, as the lower ones are open by now.
    const int opened = ::open("/dev/null", O_RDWR);
    if (opened >= 0 && opened != fd) ::close(opened);
  }
}

void ignore_file_size_signal() {
  std::signal(SIGXFSZ, SIG_IGN);
}

namespace {

// OMP_STACKSIZE as the OpenMP specification writes it: a size in bytes with an optional unit
// B, K, M or G (K when none), spaces around allowed. nullopt for what is not one (libgomp
// reports those itself).
std::optional<unsigned long long> stack_size_bytes(std::string_view v) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!v.empty() && space(v.front())) v.remove_prefix(1);
  while (!v.empty() && space(v.back())) v.remove_suffix(1);
  unsigned long long n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end == v.data()) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(v.data() + v.size() - end));
  while (!unit.empty() && space(unit.front())) unit.remove_prefix(1);
  if (unit.size() > 1) return std::nullopt;
  int shift = 10;
  if (!unit.empty()) {
    switch (unit.front()) {
      case 'b':
      case 'B':
        shift = 0;
        break;
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return std::nullopt;
    }
  }
  if (n > (~0ULL >> shift)) return ~0ULL;  // past any machine's memory: not too small
  return n << shift;
}

}  // namespace

std::optional<std::string> stack_size_error() {
  constexpr unsigned long long kMinimum = 256ULL << 10;
  const char* env = std::getenv("OMP_STACKSIZE");
  if (env == nullptr) return std::nullopt;
  const std::optional<unsigned long long> bytes = stack_size_bytes(env);
  if (!bytes || *bytes >= kMinimum) return std::nullopt;
  return fmt::format(
      "OMP_STACKSIZE={}: {} bytes of stack for each OpenMP thread (expected at least 256K: the "
      "kernels keep their tiles on their threads' stacks, and smaller stacks overflow)",
      env, *bytes);
}

std::optional<std::string> oversubscription_note() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof(mask), &mask) != 0) return std::nullopt;
  const int cpus = CPU_COUNT(&mask);
  const int threads = omp_get_max_threads();
  if (cpus <= 0 || threads <= cpus) return std::nullopt;
  const char* env = std::getenv("OMP_NUM_THREADS");
  return fmt::format(
      "OMP_NUM_THREADS{}{}: {} threads on the {} CPU{} this process may run on: they take turns, "
      "and every barrier waits for the one not running (set OMP_NUM_THREADS={} or fewer)",
      env != nullptr ? "=" : "", env != nullptr ? env : "", threads, cpus, cpus == 1 ? "" : "s",
      cpus);
}

std::optional<std::string> settle_threads() {
  kernels::settle_openmp_teams();
  if (std::string bad = kernels::amx_setting_error(); !bad.empty()) return bad;
  if (std::optional<std::string> bad = stack_size_error()) return bad;
  constexpr int kPerCore = 16;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = omp_get_max_threads();
  if (cores <= 0 || threads <= kPerCore * cores) return std::nullopt;
  const char* env = std::getenv("OMP_NUM_THREADS");
  return fmt::format(
      "OMP_NUM_THREADS{}{}: {} threads on {} cores (expected at most {}, {} a core: more only "
      "slow the run, and past a few thousand they cannot be created)",
      env != nullptr ? "=" : "", env != nullptr ? env : "", threads, cores, kPerCore * cores,
      kPerCore);
}

}  // namespace mantissa::app
