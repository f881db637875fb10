// The bucketed, overlapped all-reduce across ranks, against the average computed directly:
// every rank recomputes every rank's gradients in one process and sums them in rank order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"
#include "tiny_net.hpp"
#include "wire_bound.hpp"
#include "world.hpp"

namespace mantissa::testing {
namespace {

using dist::GradientReducer;
using dist::WireFormat;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr std::int64_t kCap = 8 * 1024;

// Every parameter's gradient, as floats, and their bytes on this rank.
std::vector<std::vector<float>> grads_of(const TinyNet& net) {
  std::vector<std::vector<float>> g;
  for (const Variable& p : net.params()) g.push_back(p.grad().to_vector());
  return g;
}
void require_same_on_every_rank(const std::vector<std::vector<float>>& g) {
  std::vector<float> flat;
  for (const auto& v : g) flat.insert(flat.end(), v.begin(), v.end());
  dist::require_identical(world(), std::as_bytes(std::span(flat)), "the reduced gradients");
}

// The sum of every rank's gradients for `step`, in rank order, in float32.
std::vector<std::vector<float>> rank_order_sum(TinyNet& net, int step) {
  std::vector<std::vector<float>> sum = net.local_grads(0, step);
  for (int r = 1; r < world().size(); ++r) {
    const auto g = net.local_grads(r, step);
    for (std::size_t p = 0; p < sum.size(); ++p) {
      for (std::size_t i = 0; i < sum[p].size(); ++i) sum[p][i] += g[p][i];
    }
  }
  return sum;
}

// The average of every rank's gradients for `step`: sum in rank order, times 1/N, in float32.
std::vector<std::vector<float>> rank_order_average(TinyNet& net, int step) {
  std::vector<std::vector<float>> sum = rank_order_sum(net, step);
  const float inverse = 1.0f / static_cast<float>(world().size());
  for (auto& v : sum) {
    for (float& x : v) x *= inverse;
  }
  return sum;
}

void expect_bits_equal(const std::vector<std::vector<float>>& got,
                       const std::vector<std::vector<float>>& want, int step) {
  for (std::size_t p = 0; p < want.size(); ++p) {
    for (std::size_t i = 0; i < want[p].size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[p][i]), std::bit_cast<std::uint32_t>(want[p][i]))
          << "step " << step << " parameter " << p << " element " << i << ": " << got[p][i]
          << " vs " << want[p][i];
    }
  }
}

TEST(GradientReducer, OverlappedBucketsGiveTheRankOrderAverageBitForBit) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = kCap});
  ASSERT_EQ(reducer.plan().buckets.size(), 3u);
  for (int step = 0; step < 3; ++step) {
    const auto want = rank_order_average(net, step);
    net.clear_grads();
    autograd::backward(net.loss(world().rank(), step), 1.0f, reducer.hook());
    reducer.finish();
    EXPECT_EQ(reducer.stats().started_during_backward, 3) << "every bucket starts in backward";
    expect_bits_equal(grads_of(net), want, step);
    require_same_on_every_rank(grads_of(net));
  }
}

// The trainer's mode: every rank's gradient is already its share, and the shares are summed.
TEST(GradientReducer, WithoutAveragingItGivesTheRankOrderSumBitForBit) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = kCap, .average = false});
  for (int step = 0; step < 2; ++step) {
    const auto want = rank_order_sum(net, step);
    net.clear_grads();
    autograd::backward(net.loss(world().rank(), step), 1.0f, reducer.hook());
    reducer.finish();
    expect_bits_equal(grads_of(net), want, step);
    require_same_on_every_rank(grads_of(net));
  }
}

TEST(GradientReducer, TheResultDoesNotDependOnTheOrderBucketsStart) {
  // Rank 0 starts buckets from the hook, as the backward readies them (last layer first);
  // the other ranks start them all at finish(), in bucket order.
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = kCap});
  const auto want = rank_order_average(net, 5);
  net.clear_grads();
  if (world().rank() == 0) {
    autograd::backward(net.loss(0, 5), 1.0f, reducer.hook());
  } else {
    autograd::backward(net.loss(world().rank(), 5));
  }
  reducer.finish();
  expect_bits_equal(grads_of(net), want, 5);
}

TEST(GradientReducer, OneBucketAfterTheBackwardGivesTheSameBits) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = std::int64_t{1} << 30});
  ASSERT_EQ(reducer.plan().buckets.size(), 1u);
  const auto want = rank_order_average(net, 2);
  net.clear_grads();
  autograd::backward(net.loss(world().rank(), 2));
  reducer.finish();
  expect_bits_equal(grads_of(net), want, 2);
}

TEST(GradientReducer, Bfloat16WireStaysWithinItsBoundIdenticallyOnEveryRank) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(),
                          {.bucket_cap_bytes = kCap, .wire = WireFormat::bfloat16});
  const int n = world().size();
  std::vector<std::vector<std::vector<float>>> local;
  for (int r = 0; r < n; ++r) local.push_back(net.local_grads(r, 1));
  net.clear_grads();
  autograd::backward(net.loss(world().rank(), 1), 1.0f, reducer.hook());
  reducer.finish();
  const auto got = grads_of(net);
  int rounded = 0;
  for (std::size_t p = 0; p < got.size(); ++p) {
    for (std::size_t i = 0; i < got[p].size(); ++i) {
      double mean = 0, mean_abs = 0;
      for (int r = 0; r < n; ++r) {
        mean += local[static_cast<std::size_t>(r)][p][i];
        mean_abs += std::fabs(local[static_cast<std::size_t>(r)][p][i]);
      }
      mean /= n;
      mean_abs /= n;
      ASSERT_LE(std::fabs(got[p][i] - mean), bfloat16_wire_bound(n, mean_abs))
          << "parameter " << p << " element " << i;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[p][i]) & 0xffffu, 0u) << "not a bfloat16 value";
      rounded += got[p][i] != static_cast<float>(mean);
    }
  }
  EXPECT_GT(rounded, 0);
  require_same_on_every_rank(got);
}

TEST(GradientReducer, AParameterWithoutAGradientSendsZeros) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = kCap});
  // Only rank 0 has a gradient for b2; the average is half of it on 2 ranks.
  net.clear_grads();
  Variable b2 = net.params()[3];
  if (world().rank() == 0) b2.mutable_grad() = Tensor::full({40}, 3.0f);
  reducer.finish();
  const float expected = 3.0f * (1.0f / static_cast<float>(world().size()));
  for (const float g : b2.grad().to_vector()) ASSERT_EQ(g, expected);
  for (const float g : net.params()[0].grad().to_vector()) ASSERT_EQ(g, 0.0f);
}

TEST(GradientReducer, AGradientFinalTwiceBeforeFinishIsAnError) {
  TinyNet net;
  GradientReducer reducer(world(), net.params(), {.bucket_cap_bytes = kCap});
  net.clear_grads();
  autograd::backward(net.loss(world().rank(), 0), 1.0f, reducer.hook());
  EXPECT_THROW(autograd::backward(net.loss(world().rank(), 1), 1.0f, reducer.hook()), Error);
  reducer.finish();  // the buckets the first backward started still complete on every rank
}

TEST(GradientReducer, RanksWithDifferentParametersAreNamed) {
  TinyNet net;
  std::vector<Variable> params = net.params();
  if (world().rank() == 1) params.pop_back();
  EXPECT_THAT([&] { GradientReducer reducer(world(), params); },
              ThrowsMessage<Error>(HasSubstr("a mismatch across ranks in the parameter sizes and "
                                             "reducer options: rank 1 differs from rank 0")));
}

}  // namespace
}  // namespace mantissa::testing
