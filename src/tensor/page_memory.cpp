#include "mantissa/tensor/page_memory.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace mantissa::tensor {
namespace {

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

void* allocate_pages(std::size_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX / 2 - kLargePageBytes) throw std::bad_alloc();
  const std::size_t length = round_up(bytes, 4096);
  // Map a page more than needed, then unmap the slack on both sides of the aligned part.
  const std::size_t mapped = length + kLargePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(start, kLargePageBytes);
  if (aligned > start) munmap(raw, aligned - start);
  const std::size_t tail = start + mapped - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  // Only whole large pages: a partial one at the end stays in 4 KiB pages, so touching its
  // first byte does not make 2 MiB resident.
  const std::size_t whole = bytes / kLargePageBytes * kLargePageBytes;
  // Advice, not a requirement: where the kernel has no huge pages the buffer keeps small ones.
  if (whole > 0) (void)madvise(reinterpret_cast<void*>(aligned), whole, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void free_pages(void* p, std::size_t bytes) noexcept {
  if (p != nullptr) munmap(p, round_up(bytes, 4096));
}

}  // namespace mantissa::tensor
