// Bucket plans and parts, against plans worked out by hand.
#include <gtest/gtest.h>

#include "mantissa/dist/bucketing.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {
namespace {

TEST(PlanBuckets, FillsBucketsInParameterOrderUpToTheCap) {
  // cap 400 bytes = 100 float32 elements: [60, 30] | [50, 50] | [10]
  const BucketPlan plan = plan_buckets({60, 30, 50, 50, 10}, 400);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].params, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(plan.buckets[0].offsets, (std::vector<std::int64_t>{0, 60}));
  EXPECT_EQ(plan.buckets[0].numel, 90);
  EXPECT_EQ(plan.buckets[1].params, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(plan.buckets[1].offsets, (std::vector<std::int64_t>{0, 50}));
  EXPECT_EQ(plan.buckets[1].numel, 100);
  EXPECT_EQ(plan.buckets[2].params, (std::vector<std::size_t>{4}));
  EXPECT_EQ(plan.bucket_of, (std::vector<std::size_t>{0, 0, 1, 1, 2}));
}

TEST(PlanBuckets, AParameterLargerThanTheCapGetsABucketOfItsOwn) {
  const BucketPlan plan = plan_buckets({10, 1000, 10}, 400);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[1].params, (std::vector<std::size_t>{1}));
  EXPECT_EQ(plan.buckets[1].numel, 1000);
  EXPECT_EQ(plan.bucket_of, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(PlanBuckets, EmptyParametersJoinTheCurrentBucket) {
  const BucketPlan plan = plan_buckets({0, 100, 0}, 400);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].offsets, (std::vector<std::int64_t>{0, 0, 100}));
}

TEST(PlanBuckets, AHugeCapMakesOneBucket) {
  const BucketPlan plan = plan_buckets({3, 4, 5}, std::int64_t{1} << 40);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].numel, 12);
}

TEST(PlanBuckets, RejectsANonPositiveCap) {
  EXPECT_THROW(plan_buckets({1}, 0), Error);
  EXPECT_THROW(plan_buckets({-1}, 4), Error);
}

TEST(PartOf, SplitsIntoNearEqualPartsCoveringEveryElement) {
  // 10 elements over 4 parts: 3, 3, 2, 2.
  const std::int64_t expected[4][2] = {{0, 3}, {3, 6}, {6, 8}, {8, 10}};
  for (int p = 0; p < 4; ++p) {
    const Range r = part_of(10, 4, p);
    EXPECT_EQ(r.begin, expected[p][0]);
    EXPECT_EQ(r.end, expected[p][1]);
  }
  // Fewer elements than parts: the last parts are empty.
  EXPECT_EQ(part_of(2, 4, 3).size(), 0);
  EXPECT_EQ(part_of(2, 4, 1).size(), 1);
  EXPECT_THROW(part_of(10, 4, 4), Error);
}

}  // namespace
}  // namespace mantissa::dist
