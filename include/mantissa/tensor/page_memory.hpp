#pragma once
// Large buffers mapped from the kernel, in its 2 MiB pages where it lends them (transparent
// huge pages in "madvise" or "always" mode): a fresh buffer then costs one page fault per
// 2 MiB instead of one per 4 KiB, and its reads miss the TLB less. Only the whole 2 MiB pages
// inside the buffer are asked for, so its resident size is what it touches, as with ordinary
// pages. Contents are uninitialized.
//
// Freed buffers are kept for reuse, up to kPageReuseBytes in all: a buffer of the same
// rounded length is then handed out again without page faults or the kernel's zeroing (most
// of the cost of a new large result). A kept buffer is marked MADV_FREE, so the kernel may
// take its pages back under memory pressure (it then reads as zeros: contents are
// uninitialized either way); until then it counts in the process's resident size.
#include <cstddef>

namespace mantissa::tensor {

constexpr std::size_t kLargePageBytes = std::size_t{2} << 20;

// Buffers of at least this many bytes are worth a mapping of their own.
constexpr std::size_t kPageMemoryFrom = std::size_t{4} << 20;

// At most this many bytes of freed buffers are kept for reuse.
constexpr std::size_t kPageReuseBytes = std::size_t{256} << 20;

// `bytes` (> 0) of memory aligned to kLargePageBytes; throws std::bad_alloc when the kernel
// refuses the mapping.
void* allocate_pages(std::size_t bytes);

// Returns what allocate_pages(bytes) gave, with the same `bytes`: kept for reuse where it
// fits under kPageReuseBytes (the oldest kept buffers unmapped to make room), else unmapped.
void free_pages(void* p, std::size_t bytes) noexcept;

// The bytes of freed buffers kept for reuse now, and unmapping all of them.
std::size_t kept_page_bytes() noexcept;
void release_kept_pages() noexcept;

}  // namespace mantissa::tensor
