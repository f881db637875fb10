#pragma once
// Reference-counted, 64-byte-aligned tensor storage from a reuse pool. A block released by its
// last tensor goes back to a free list of its size class; the next request of that class
// reuses it, so a training step at steady state does not call the system allocator.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace mantissa::tensor {

struct PoolStats {
  std::uint64_t system_allocations = 0;  // blocks obtained from the system allocator
  std::uint64_t system_bytes = 0;        // bytes obtained from the system allocator
  std::uint64_t reuses = 0;              // requests served from a free list
  std::uint64_t live_blocks = 0;         // blocks held by tensors now
  std::uint64_t live_bytes = 0;          // their size classes' bytes
  std::uint64_t peak_live_bytes = 0;     // the most live_bytes has been (reset_peak clears)
  std::uint64_t cached_blocks = 0;       // blocks waiting in free lists
  std::uint64_t cached_bytes = 0;
};

PoolStats pool_stats();
// Starts a new peak_live_bytes window at the current live_bytes.
void pool_reset_peak();
// Returns every cached block to the system.
void pool_trim();

// One block of bytes; the header sits in the same pooled allocation as the data.
class Storage {
 public:
  static Storage* create(std::size_t bytes);  // refcount 1; contents uninitialized
  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();
  std::int64_t use_count() const { return refs_.load(std::memory_order_acquire); }

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  Storage() = default;
  std::atomic<std::int64_t> refs_{1};
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t block_bytes_ = 0;  // the size class
};

// An intrusive owning pointer to a Storage.
class StorageRef {
 public:
  StorageRef() = default;
  explicit StorageRef(Storage* s) : s_(s) {}  // adopts the reference
  StorageRef(const StorageRef& o) : s_(o.s_) {
    if (s_) s_->retain();
  }
  StorageRef(StorageRef&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  StorageRef& operator=(StorageRef o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~StorageRef() {
    if (s_) s_->release();
  }
  Storage* get() const { return s_; }
  Storage* operator->() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }

 private:
  Storage* s_ = nullptr;
};

}  // namespace mantissa::tensor
