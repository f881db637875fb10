#pragma once
// Internal: facts about the machine and process a run is on, for its records: the CPU's
// name and the process's peak resident memory (what `bench train` and every metrics window
// report).
#include <cpuid.h>
#include <sys/resource.h>

#include <cstring>
#include <string>

namespace mantissa::support {

// MiB, from getrusage (Linux reports KiB).
inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// The CPU's brand string from CPUID ("AMD EPYC 7B13 64-Core Processor"); empty where the CPU
// has none.
inline std::string cpu_name() {
  unsigned regs[12] = {};
  unsigned top = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &top, &ebx, &ecx, &edx) == 0 || top < 0x80000004u) return "";
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    __get_cpuid(0x80000002u + leaf, &regs[4 * leaf], &regs[4 * leaf + 1], &regs[4 * leaf + 2],
                &regs[4 * leaf + 3]);
  }
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string name(text);
  const auto first = name.find_first_not_of(' ');
  const auto last = name.find_last_not_of(' ');
  return first == std::string::npos ? "" : name.substr(first, last - first + 1);
}

}  // namespace mantissa::support
