#pragma once
// This machine's physical memory, the bound every size read from a file (a corpus, an IDX
// array, a model's parameter count) is checked against before anything is allocated.
#include <unistd.h>

#include <cstdint>

namespace mantissa {

// Bytes of physical memory; 0 where the system does not say.
inline std::int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::int64_t>(pages) * static_cast<std::int64_t>(page);
}

}  // namespace mantissa
