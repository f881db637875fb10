// The tensor pool: freed blocks wait in their size class's list; a large request whose own class
// has none may take a cached block of a larger class, up to twice its size, and that block goes
// back to its own class when freed. Sizes below follow the classes 2^k, 1.25, 1.5 and 1.75 * 2^k
// data bytes plus a 64-byte header (src/tensor/storage.cpp).
#include <gtest/gtest.h>

#include "mantissa/tensor/storage.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::tensor {
namespace {

TEST(Pool, ALargeRequestBorrowsACachedBlockUpToTwiceItsSizeAndItReturnsToItsClass) {
  pool_trim();  // nothing cached: every count below is this test's
  const PoolStats start = pool_stats();
  { const Tensor a = Tensor::empty(Shape{1'000'000}, Format::float32); }  // class 4 MiB, cached
  const PoolStats after_a = pool_stats();
  EXPECT_EQ(after_a.system_allocations, start.system_allocations + 1);
  EXPECT_EQ(after_a.cached_blocks, 1u);
  {
    // 2,000,000 bytes: class 2 MiB, whose list is empty; the 4 MiB block is at most twice it.
    const Tensor b = Tensor::empty(Shape{1'000'000}, Format::bfloat16);
    const PoolStats during_b = pool_stats();
    EXPECT_EQ(during_b.system_allocations, after_a.system_allocations);
    EXPECT_EQ(during_b.reuses, after_a.reuses + 1);
    EXPECT_EQ(during_b.live_bytes, (std::uint64_t{1} << 22) + 64);  // the block it really holds
  }
  { const Tensor again = Tensor::empty(Shape{1'000'000}, Format::float32); }  // back in 4 MiB
  EXPECT_EQ(pool_stats().system_allocations, after_a.system_allocations);
  // 800,000 bytes (class 896 KiB): the cached 4 MiB block is more than twice that: it stays.
  { const Tensor c = Tensor::empty(Shape{400'000}, Format::bfloat16); }
  EXPECT_EQ(pool_stats().system_allocations, after_a.system_allocations + 1);
  // Small requests (below 64 KiB) only ever use their own class.
  { const Tensor big = Tensor::empty(Shape{12'000}, Format::float32); }   // 48,000 B: class 48 KiB
  { const Tensor small = Tensor::empty(Shape{7'000}, Format::float32); }  // 28,000 B: class 28 KiB
  EXPECT_EQ(pool_stats().system_allocations, after_a.system_allocations + 3);
  pool_trim();
}

}  // namespace
}  // namespace mantissa::tensor
