// Page memory (mantissa/tensor/page_memory.hpp): mappings aligned to 2 MiB, every byte
// writable, the whole 2 MiB pages inside marked for the kernel's large pages (the "hg" flag
// of /proc/self/smaps, set by the advice whatever pages the kernel then finds), the partial
// page at the end not marked, sizes no mapping can hold refused, and freed buffers reused for
// the same size within kPageReuseBytes (the mappings seen in /proc/self/smaps).
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
  release_kept_pages();
  EXPECT_TRUE(mappings_over(p, kBytes).empty())
      << "the buffer is still mapped after free_pages and release_kept_pages";
}

TEST(PageMemory, FreedBuffersAreReusedForTheSameSizeWithinTheBound) {
  release_kept_pages();
  ASSERT_EQ(kept_page_bytes(), 0u);
  constexpr std::size_t kBytes = 3 * kLargePageBytes + 100;
  void* p = allocate_pages(kBytes);
  static_cast<unsigned char*>(p)[kBytes - 1] = 1;
  free_pages(p, kBytes);
  const std::size_t length = (kBytes + 4095) / 4096 * 4096;
  EXPECT_EQ(kept_page_bytes(), length);
  EXPECT_FALSE(mappings_over(p, kBytes).empty()) << "a kept buffer is still mapped";
  // Another size does not take it; the same size (a different byte count inside the same 4 KiB
  // page and the same whole large pages) does.
  void* other = allocate_pages(kBytes + 4096);
  EXPECT_NE(other, p);
  free_pages(other, kBytes + 4096);
  void* again = allocate_pages(kBytes - 50);
  EXPECT_EQ(again, p);
  EXPECT_EQ(kept_page_bytes(), length + 4096) << "only the other size's buffer is kept";
  // Every byte of a reused buffer is writable.
  std::memset(again, 0x5a, kBytes - 50);
  free_pages(again, kBytes - 50);

  // More buffers than the table holds: the oldest go, and the total stays within the bound.
  release_kept_pages();
  std::vector<void*> many;
  for (int i = 0; i < 20; ++i) many.push_back(allocate_pages(kPageMemoryFrom));
  for (void* m : many) free_pages(m, kPageMemoryFrom);
  EXPECT_LE(kept_page_bytes(), kPageReuseBytes);
  EXPECT_LT(kept_page_bytes(), 20 * kPageMemoryFrom) << "more buffers kept than the table holds";
  EXPECT_TRUE(mappings_over(many.front(), kPageMemoryFrom).empty()) << "the oldest is not unmapped";
  EXPECT_FALSE(mappings_over(many.back(), kPageMemoryFrom).empty()) << "the newest is not kept";

  // A buffer over the bound is unmapped at once; release_kept_pages unmaps the rest.
  const std::size_t big = kPageReuseBytes + kLargePageBytes;
  void* huge = allocate_pages(big);
  const std::size_t before = kept_page_bytes();
  free_pages(huge, big);
  EXPECT_EQ(kept_page_bytes(), before);
  EXPECT_TRUE(mappings_over(huge, big).empty());
  release_kept_pages();
  EXPECT_EQ(kept_page_bytes(), 0u);
  EXPECT_TRUE(mappings_over(many.back(), kPageMemoryFrom).empty());
}

TEST(PageMemory, SizesNoMappingCanHoldAreRefused) {
  EXPECT_THROW(allocate_pages(0), std::bad_alloc);
  EXPECT_THROW(allocate_pages(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  EXPECT_THROW(allocate_pages(std::numeric_limits<std::size_t>::max() / 2), std::bad_alloc);
}

}  // namespace
}  // namespace mantissa::tensor
