// Page memory (mantissa/tensor/page_memory.hpp): mappings aligned to 2 MiB, every byte
// writable, the whole 2 MiB pages inside marked for the kernel's large pages (the "hg" flag
// of /proc/self/smaps, set by the advice whatever pages the kernel then finds), the partial
// page at the end not marked, and sizes no mapping can hold refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "mantissa/tensor/page_memory.hpp"

namespace mantissa::tensor {
namespace {

struct Mapping {
  std::uintptr_t begin = 0, end = 0;
  std::string flags;  // VmFlags, e.g. "rd wr mr mw me ac hg"
};

// The mappings of this process that overlap [p, p + bytes), from /proc/self/smaps.
std::vector<Mapping> mappings_over(const void* p, std::size_t bytes) {
  const auto lo = reinterpret_cast<std::uintptr_t>(p), hi = lo + bytes;
  std::ifstream smaps("/proc/self/smaps");
  std::vector<Mapping> found;
  std::string line;
  Mapping current;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t b = 0, e = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> b >> dash >> e && dash == '-' &&
        line.find(':') > line.find(' ')) {  // a range line, not a "Key: value" line
      current = Mapping{b, e, ""};
      inside = b < hi && e > lo;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      current.flags = line.substr(8);
      found.push_back(current);
    }
  }
  return found;
}

bool advised(const Mapping& m) {
  return (" " + m.flags + " ").find(" hg ") != std::string::npos;
}

TEST(PageMemory, IsAlignedWritableAndAdvisedForLargePagesOnlyWhereWhole) {
  constexpr std::size_t kBytes = 2 * kLargePageBytes + 12345;  // two whole pages and a part
  void* p = allocate_pages(kBytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kLargePageBytes, 0u);
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kBytes; ++i) {
    wrong += bytes[i] != static_cast<unsigned char>(i * 7 + 1);
  }
  EXPECT_EQ(wrong, 0u);

  const std::vector<Mapping> maps = mappings_over(p, kBytes);
  ASSERT_FALSE(maps.empty()) << "no mapping of /proc/self/smaps covers the buffer";
  // A kernel built without transparent huge pages refuses the advice (and has no such file):
  // the buffer then keeps small pages, which is all there is to check.
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    std::printf("[  SKIPPED ] large-page advice: this kernel has no transparent huge pages\n");
    free_pages(p, kBytes);
    return;
  }
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t whole_end = start + 2 * kLargePageBytes;
  for (const Mapping& m : maps) {
    if (m.begin >= start && m.end <= whole_end) {
      EXPECT_TRUE(advised(m)) << "the whole 2 MiB pages are not advised: " << m.flags;
    }
    if (m.end > whole_end) {  // holds part of the partial page
      EXPECT_FALSE(advised(m)) << "the partial page at the end is advised: " << m.flags;
    }
  }
  free_pages(p, kBytes);
  EXPECT_TRUE(mappings_over(p, kBytes).empty()) << "the buffer is still mapped after free_pages";
}

TEST(PageMemory, SizesNoMappingCanHoldAreRefused) {
  EXPECT_THROW(allocate_pages(0), std::bad_alloc);
  EXPECT_THROW(allocate_pages(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  EXPECT_THROW(allocate_pages(std::numeric_limits<std::size_t>::max() / 2), std::bad_alloc);
}

}  // namespace
}  // namespace mantissa::tensor
