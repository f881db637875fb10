#include "process_setup.hpp"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
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

std::optional<std::string> settle_threads() {
  kernels::settle_openmp_teams();
  if (std::string bad = kernels::amx_setting_error(); !bad.empty()) return bad;
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
