#include "mantissa/tensor/storage.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace mantissa::tensor {
namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kHeader = 64;  // Storage header, padded so data stays 64-byte aligned
static_assert(sizeof(Storage) <= kHeader);

// Size classes of the data: 2^k, 1.25, 1.5 and 1.75 times 2^k bytes (at most a fifth wasted),
// at least 256; a block is its class plus the header, so a tensor of exactly a class's size
// fits it.
std::size_t size_class(std::size_t bytes) {
  std::size_t c = 256;
  while (c < bytes) {
    for (std::size_t quarters = 5; quarters <= 7; ++quarters) {
      const std::size_t step = c / 4 * quarters;
      if (step >= bytes) return step;
    }
    c *= 2;
  }
  return c;
}

// Blocks of at least this size may be served from a cached block of a larger class (up to
// twice the size) rather than from the system: a step's large tensors change size classes
// between its phases (a forward's activations, a backward's gradients in another width), and
// without this the pool would hold both sets.
constexpr std::size_t kLendLargerFrom = std::size_t{1} << 16;

class Pool {
 public:
  // A block of at least `block` bytes; *got receives its size (what give_back takes).
  void* acquire(std::size_t block, std::size_t* got) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(block);
    if ((it == free_.end() || it->second.empty()) && block >= kLendLargerFrom) {
      it = free_.upper_bound(block);
      while (it != free_.end() && it->first <= 2 * block && it->second.empty()) ++it;
      if (it != free_.end() && it->first > 2 * block) it = free_.end();
    }
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++stats_.reuses;
      --stats_.cached_blocks;
      stats_.cached_bytes -= it->first;
      note_live(it->first);
      *got = it->first;
      return p;
    }
    void* p = std::aligned_alloc(kAlign, block);
    if (p == nullptr) throw std::bad_alloc();
    ++stats_.system_allocations;
    stats_.system_bytes += block;
    note_live(block);
    *got = block;
    return p;
  }
  void give_back(void* p, std::size_t block) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = free_[block];
    // A free list only grows: once warm, pushing a returned block does not allocate.
    list.push_back(p);
    --stats_.live_blocks;
    stats_.live_bytes -= block;
    ++stats_.cached_blocks;
    stats_.cached_bytes += block;
  }
  PoolStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_live_bytes = stats_.live_bytes;
  }
  void trim() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [block, list] : free_) {
      for (void* p : list) std::free(p);
      list.clear();
    }
    stats_.cached_blocks = 0;
    stats_.cached_bytes = 0;
  }

 private:
  void note_live(std::size_t block) {
    ++stats_.live_blocks;
    stats_.live_bytes += block;
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  }
  std::mutex mu_;
  std::map<std::size_t, std::vector<void*>> free_;
  PoolStats stats_;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: tensors may outlive static destructors
  return *p;
}

}  // namespace

PoolStats pool_stats() {
  return pool().stats();
}
void pool_reset_peak() {
  pool().reset_peak();
}
void pool_trim() {
  pool().trim();
}

Storage* Storage::create(std::size_t bytes) {
  std::size_t block = 0;
  void* raw = pool().acquire(size_class(bytes) + kHeader, &block);
  auto* s = new (raw) Storage();
  s->data_ = static_cast<char*>(raw) + kHeader;
  s->bytes_ = bytes;
  s->block_bytes_ = block;
  return s;
}

void Storage::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const std::size_t block = block_bytes_;
    this->~Storage();
    pool().give_back(this, block);
  }
}

}  // namespace mantissa::tensor
