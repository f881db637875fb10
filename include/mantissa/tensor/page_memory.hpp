#pragma once
// Large buffers mapped from the kernel, in its 2 MiB pages where it lends them (transparent
// huge pages in "madvise" or "always" mode): a fresh buffer then costs one page fault per
// 2 MiB instead of one per 4 KiB, and its reads miss the TLB less. Only the whole 2 MiB pages
// inside the buffer are asked for, so its resident size is what it touches, as with ordinary
// pages. Contents are uninitialized.
#include <cstddef>

namespace mantissa::tensor {

constexpr std::size_t kLargePageBytes = std::size_t{2} << 20;

// Buffers of at least this many bytes are worth a mapping of their own.
constexpr std::size_t kPageMemoryFrom = std::size_t{4} << 20;

// `bytes` (> 0) of memory aligned to kLargePageBytes; throws std::bad_alloc when the kernel
// refuses the mapping.
void* allocate_pages(std::size_t bytes);

// Returns what allocate_pages(bytes) gave, with the same `bytes`.
void free_pages(void* p, std::size_t bytes) noexcept;

}  // namespace mantissa::tensor
