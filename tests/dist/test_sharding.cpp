// The global batch split across ranks.
#include <gtest/gtest.h>

#include "mantissa/dist/sharding.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {
namespace {

TEST(ShardBatch, RanksTakeConsecutiveSlicesWhoseUnionIsTheBatch) {
  std::int64_t next = 0;
  for (int r = 0; r < 4; ++r) {
    const Shard s = shard_batch(32, r, 4);
    EXPECT_EQ(s.begin, next);
    EXPECT_EQ(s.count, 8);
    next = s.begin + s.count;
  }
  EXPECT_EQ(next, 32);
  const Shard one = shard_batch(7, 0, 1);
  EXPECT_EQ(one.begin, 0);
  EXPECT_EQ(one.count, 7);
}

TEST(ShardBatch, ABatchThatDoesNotSplitEvenlyIsAClearError) {
  try {
    shard_batch(10, 0, 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "dist: batch_size: 10 (the global batch) does not split evenly across 3 ranks; "
                 "use a multiple of 3 (such as 9 or 12)");
  }
  try {
    shard_batch(6, 1, 4, "trainer.fit.train_dataloader.batch_size");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "trainer.fit.train_dataloader.batch_size: 6 (the global batch) does not split "
                 "evenly across 4 ranks; use a multiple of 4 (such as 4 or 8)");
  }
  EXPECT_THROW(shard_batch(1, 0, 2), Error);
  EXPECT_THROW(shard_batch(0, 0, 2), Error);
}

TEST(ShardBatch, RejectsARankOutsideTheJob) {
  EXPECT_THROW(shard_batch(8, 2, 2), Error);
  EXPECT_THROW(shard_batch(8, -1, 2), Error);
}

}  // namespace
}  // namespace mantissa::dist
