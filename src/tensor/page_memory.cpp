#include "mantissa/tensor/page_memory.hpp"

#include <sys/mman.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <new>

namespace mantissa::tensor {
namespace {

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

// Freed mappings kept for reuse, oldest first, with their total length: a fixed table, so
// that free_pages allocates nothing.
struct Kept {
  void* p;
  std::size_t length, whole;  // whole: the bytes advised for large pages
};
constexpr std::size_t kMostKept = 16;
struct KeptPages {
  std::mutex lock;
  std::array<Kept, kMostKept> list{};
  std::size_t count = 0, total = 0;
  // Takes entry i out of the list (the ones after it move up) and returns it.
  Kept remove(std::size_t i) {
    const Kept e = list[i];
    for (std::size_t j = i + 1; j < count; ++j) list[j - 1] = list[j];
    --count;
    total -= e.length;
    return e;
  }
};

KeptPages& kept() {
  static KeptPages* k = new KeptPages;  // never destroyed: buffers may be freed at exit
  return *k;
}

// The bytes of a buffer of `bytes` that are whole large pages (the part advised).
std::size_t whole_pages(std::size_t bytes) {
  return bytes / kLargePageBytes * kLargePageBytes;
}

// A kept mapping of exactly `length` bytes with the same advice, taken out of the list;
// nullptr if none.
void* take_kept(std::size_t length, std::size_t whole) {
  KeptPages& k = kept();
  const std::lock_guard<std::mutex> held(k.lock);
  for (std::size_t i = k.count; i-- > 0;) {  // the newest first: its pages are likelier kept
    if (k.list[i].length == length && k.list[i].whole == whole) return k.remove(i).p;
  }
  return nullptr;
}

void* map_aligned(std::size_t bytes, std::size_t length) {
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
  const std::size_t whole = whole_pages(bytes);
  // Advice, not a requirement: where the kernel has no huge pages the buffer keeps small ones.
  if (whole > 0) (void)madvise(reinterpret_cast<void*>(aligned), whole, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

void* allocate_pages(std::size_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX / 2 - kLargePageBytes) throw std::bad_alloc();
  const std::size_t length = round_up(bytes, 4096);
  if (void* p = take_kept(length, whole_pages(bytes))) return p;
  return map_aligned(bytes, length);
}

void free_pages(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t length = round_up(bytes, 4096);
  // The kernel may reclaim the pages from here on; one that cannot mark them unmaps them.
  if (length > kPageReuseBytes || madvise(p, length, MADV_FREE) != 0) {
    munmap(p, length);
    return;
  }
  KeptPages& k = kept();
  const std::lock_guard<std::mutex> held(k.lock);
  while (k.count == kMostKept || k.total + length > kPageReuseBytes) {
    const Kept oldest = k.remove(0);
    munmap(oldest.p, oldest.length);
  }
  k.list[k.count++] = {p, length, whole_pages(bytes)};
  k.total += length;
}

std::size_t kept_page_bytes() noexcept {
  KeptPages& k = kept();
  const std::lock_guard<std::mutex> held(k.lock);
  return k.total;
}

void release_kept_pages() noexcept {
  KeptPages& k = kept();
  const std::lock_guard<std::mutex> held(k.lock);
  while (k.count > 0) {
    const Kept e = k.remove(k.count - 1);
    munmap(e.p, e.length);
  }
}

}  // namespace mantissa::tensor
