// One overflow decision, one norm and one loss-scaler state on every rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/sharding.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"
#include "world.hpp"

namespace mantissa::testing {
namespace {

using autograd::Variable;
using dist::GradLayout;
using tensor::Tensor;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(AgreeOnStep, AnOverflowOnOneRankIsAnOverflowOnAll) {
  const int me = world().rank();
  const dist::StepDecision d =
      dist::agree_on_step(world(), me != 1, 0.5 * (me + 1), GradLayout::sharded);
  EXPECT_FALSE(d.finite);
  EXPECT_EQ(d.nonfinite_ranks, std::vector<int>{1});
}

TEST(AgreeOnStep, ShardedNormsAddInRankOrder) {
  const int me = world().rank();
  const dist::StepDecision d =
      dist::agree_on_step(world(), true, 0.1 * (me + 1), GradLayout::sharded);
  double want = 0.1;
  for (int r = 1; r < world().size(); ++r) want += 0.1 * (r + 1);
  EXPECT_TRUE(d.finite);
  EXPECT_EQ(d.sum_squares, want);
}

TEST(AgreeOnStep, ReplicatedNormsThatDifferNameTheRank) {
  const int me = world().rank();
  EXPECT_EQ(dist::agree_on_step(world(), true, 4.0, GradLayout::replicated).norm(), 2.0);
  EXPECT_THAT(
      [&] { dist::agree_on_step(world(), true, me == 1 ? 4.5 : 4.0, GradLayout::replicated); },
      ThrowsMessage<Error>(HasSubstr("squared norm 4.5 on rank 1 vs 4 on rank 0")));
}

TEST(RequireIdentical, NamesTheFirstRankThatDiffers) {
  const int me = world().rank();
  const char same[] = "loss_scale=32768";
  dist::require_identical(world(), std::as_bytes(std::span(same)), "the scaler state");
  const char differs[] = "loss_scale=16384";
  const auto blob = std::as_bytes(std::span(me == 1 ? differs : same));
  EXPECT_THAT([&] { dist::require_identical(world(), blob, "the scaler state"); },
              ThrowsMessage<Error>(HasSubstr(
                  "a mismatch across ranks in the scaler state: rank 1 differs from rank 0 at "
                  "byte 11")));
}

TEST(AgreeOnSuccess, AFailureOnOneRankStopsEveryRankNamingIt) {
  const int me = world().rank();
  const int n = world().size();
  EXPECT_NO_THROW(dist::agree_on_success(world(), ""));
  const std::string expected = "dist: rank 1 of " + std::to_string(n) + ": data.txt: missing";
  EXPECT_THAT([&] { dist::agree_on_success(world(), me == 1 ? "data.txt: missing" : ""); },
              ThrowsMessage<dist::JobError>(expected));
  // A message that names its rank already is not named twice.
  const std::string named = "dist: rank 1 of " + std::to_string(n) + ": no message for 2 s";
  EXPECT_THAT([&] { dist::agree_on_success(world(), me == 1 ? named : ""); },
              ThrowsMessage<dist::JobError>(named));
}

TEST(AgreeOnSuccess, AFailureEveryRankSharesIsReportedAsItIs) {
  EXPECT_THAT([&] { dist::agree_on_success(world(), "batch_size: 3 does not split"); },
              ThrowsMessage<dist::JobError>(std::string("batch_size: 3 does not split")));
  if (world().size() < 3) return;
  const int me = world().rank();
  EXPECT_THAT([&] { dist::agree_on_success(world(), me == 0 ? "" : "rank " + std::to_string(me)); },
              ThrowsMessage<dist::JobError>(HasSubstr("dist: rank 1 of")));
}

TEST(ShardBatch, TheRanksSlicesGatheredInRankOrderAreTheGlobalBatch) {
  const std::int64_t global = 4 * world().size();
  std::vector<std::int32_t> batch(static_cast<std::size_t>(global));
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::int32_t>(i * 7 + 3);
  const dist::Shard s = dist::shard_batch(global, world().rank(), world().size());
  const std::span<const std::int32_t> mine(batch.data() + s.begin,
                                           static_cast<std::size_t>(s.count));
  const std::vector<std::byte> all = world().allgather(std::as_bytes(mine));
  std::vector<std::int32_t> gathered(batch.size());
  std::memcpy(gathered.data(), all.data(), all.size());
  EXPECT_EQ(gathered, batch);
}

// Dynamic loss scaling across ranks: rank 1's gradient overflows at steps 0 and 2. The
// all-reduce carries the inf to every rank, so every rank skips those steps and halves its
// scale; after every step the scaler state and the parameters are the same bytes everywhere.
TEST(LossScaling, EveryRankSkipsTheSameStepsAndKeepsTheSameScalerState) {
  const int me = world().rank();
  const int n = world().size();
  Variable p(Tensor::full({2}, 1.0f), true);
  optim::ParamGroup group;
  group.params = {p};
  group.learning_rate = optim::constant(0.1);
  const auto opt = optim::make_optimizer(optim::Sgd{}, {group});
  amp::GradScalerOptions options;
  options.init_scale = options.max_loss_scale = 32768.0;
  amp::GradScaler scaler(options);
  dist::GradientReducer reducer(world(), {p});
  const float inf = std::numeric_limits<float>::infinity();
  for (int step = 0; step < 4; ++step) {
    const bool overflow = me == 1 && step % 2 == 0;
    const float s = static_cast<float>(scaler.get_scale());
    // Rank r's scaled gradient: S * (0.5 + r / 8), exact in float32.
    const float g = s * (0.5f + static_cast<float>(me) / 8.0f);
    p.mutable_grad() = Tensor::from_vector({g, overflow ? inf : g}, {2});
    reducer.finish();
    scaler.unscale_(*opt);
    const double norm = scaler.last_grad_norm();
    const dist::StepDecision d = dist::agree_on_step(world(), scaler.gradients_finite(*opt),
                                                     norm * norm, GradLayout::replicated);
    EXPECT_EQ(d.finite, step % 2 == 1) << "step " << step;
    EXPECT_EQ(scaler.step_if_finite(*opt), d.finite);
    scaler.update();
    const std::string state = amp::encode_scaler_state(scaler.state());
    dist::require_identical(world(), std::as_bytes(std::span(state)), "the scaler state");
    dist::require_identical(world(), std::as_bytes(std::span(p.value().f32(), 2)),
                            "the parameters");
  }
  EXPECT_EQ(scaler.state().num_skipped_steps, 2);
  EXPECT_EQ(scaler.get_scale(), 32768.0 / 4);
  // Two steps taken with the mean gradient 0.5 + (n - 1) / 16 each.
  const float mean = 0.5f + static_cast<float>(n - 1) / 16.0f;
  EXPECT_FLOAT_EQ(p.value().to_vector()[0], 1.0f - 2 * 0.1f * mean);
}

}  // namespace
}  // namespace mantissa::testing
