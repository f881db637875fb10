// Low-precision training state (optim/training_state.hpp) on hand-derived updates: plain
// bfloat16 rounding loses an update smaller than half a bfloat16 step, Kahan compensation
// carries it into the next step, stochastic rounding keeps it in expectation; bfloat16
// moments are the float32 moments rounded; the state round-trips through state_tensors.
#include <gtest/gtest.h>

#include <cmath>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim {
namespace {

using numerics::Format;

struct StateRun {
  std::vector<Variable> params;
  std::unique_ptr<Optimizer> opt;
  StateRun(const OptimizerSettings& settings, const std::vector<float>& init,
           const TrainingState& t, double lr) {
    params = {Variable(tensor::Tensor::from_vector(init, {static_cast<std::int64_t>(init.size())}),
                       true)};
    ParamGroup g;
    g.params = params;
    g.learning_rate = constant(lr);
    opt = make_optimizer(settings, {g});
    opt->set_training_state(t);
  }
  std::vector<float> step(float grad) {
    params[0].mutable_grad() = tensor::Tensor::full(params[0].shape(), grad, params[0].format());
    opt->step();
    return params[0].value().to_vector();
  }
};

TrainingState state(MasterWeights m, Format moments = Format::float32) {
  TrainingState t;
  t.master_weights = m;
  t.state_format = moments;
  t.seed = 7;
  return t;
}

// SGD, lr 1, gradient 2^-9 on w = 1: w - 2^-9 lies halfway between the bfloat16 neighbours
// 1 - 2^-8 and 1, and nearest-even keeps 1.
const float kTiny = std::ldexp(1.0f, -9);

TEST(TrainingState, PlainBfloat16LosesUpdatesBelowHalfAStep) {
  StateRun r(Sgd{}, {1.0f, 1.0f}, state(MasterWeights::bfloat16), 1.0);
  EXPECT_EQ(r.params[0].format(), Format::bfloat16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.step(kTiny)[0], 1.0f) << "step " << i;
}

TEST(TrainingState, KahanCompensationCarriesTheLostPart) {
  StateRun r(Sgd{}, {1.0f}, state(MasterWeights::bfloat16_kahan), 1.0);
  // Step 1: sum = 1 - 2^-9, a tie: w = 1 (even), c = -2^-9. Step 2: sum = 1 - 2^-9 - 2^-9
  // = 1 - 2^-8, exact: w = 1 - 2^-8, c = 0. Step 3: sum = 1 - 2^-8 - 2^-9, a tie between
  // 1 - 2^-8 (odd) and 1 - 2^-7 (even): w = 1 - 2^-7, c = +2^-9. Step 4: sum = 1 - 2^-7
  // exactly, c = 0: after four steps w is exactly 1 - 4 * 2^-9, as in float32.
  EXPECT_EQ(r.step(kTiny)[0], 1.0f);
  EXPECT_EQ(r.step(kTiny)[0], 1.0f - std::ldexp(1.0f, -8));
  EXPECT_EQ(r.step(kTiny)[0], 1.0f - std::ldexp(1.0f, -7));
  EXPECT_EQ(r.step(kTiny)[0], 1.0f - std::ldexp(1.0f, -7));
  const auto s = r.opt->state_tensors();
  ASSERT_EQ(s.count("group0.param0.kahan_compensation"), 1u);
  EXPECT_EQ(s.at("group0.param0.kahan_compensation").to_vector()[0], 0.0f);
}

TEST(TrainingState, StochasticRoundingKeepsTheUpdateInExpectation) {
  // 200,000 weights at 1, each moved by -2^-9: half a step, so each lands on 1 - 2^-8 with
  // probability 1/2. The mean then is 1 - 2^-9 within 4 sigma (sigma = 2^-9 / sqrt(n)).
  const std::size_t n = 200'000;
  StateRun r(Sgd{}, std::vector<float>(n, 1.0f), state(MasterWeights::bfloat16_stochastic), 1.0);
  const std::vector<float> w = r.step(kTiny);
  double mean = 0;
  for (float v : w) {
    ASSERT_TRUE(v == 1.0f || v == 1.0f - std::ldexp(1.0f, -8)) << v;
    mean += v;
  }
  mean /= static_cast<double>(n);
  EXPECT_NEAR(mean, 1.0 - std::ldexp(1.0, -9), 4 * std::ldexp(1.0, -9) / std::sqrt(double(n)));
  // Seeded: the same run gives the same bits.
  StateRun again(Sgd{}, std::vector<float>(n, 1.0f), state(MasterWeights::bfloat16_stochastic),
                 1.0);
  EXPECT_EQ(again.step(kTiny), w);
}

TEST(TrainingState, Bfloat16MomentsAreTheFloat32MomentsRounded) {
  AdamW adam;
  adam.weight_decay = 0.0;
  StateRun f32(adam, {0.5f, -0.25f, 2.0f}, state(MasterWeights::float32), 1e-3);
  StateRun b16(adam, {0.5f, -0.25f, 2.0f}, state(MasterWeights::float32, Format::bfloat16), 1e-3);
  f32.step(0.3f);
  b16.step(0.3f);
  const auto s32 = f32.opt->state_tensors(), s16 = b16.opt->state_tensors();
  for (const auto& [name, t] : s32) {
    if (t.numel() < 2) continue;  // scalar state stays float32
    ASSERT_EQ(s16.at(name).format(), Format::bfloat16) << name;
    std::vector<float> want = t.to_vector();
    numerics::round_to_format(want.data(), want.size(), Format::bfloat16);
    EXPECT_EQ(s16.at(name).to_vector(), want) << name;
  }
  EXPECT_EQ(b16.opt->state_bytes() * 2, f32.opt->state_bytes());
}

TEST(TrainingState, StateRoundTripsBitExactly) {
  const TrainingState t = state(MasterWeights::bfloat16_kahan, Format::bfloat16);
  StateRun a(AdamW{}, {0.5f, -0.25f, 2.0f, 1.0f}, t, 1e-2);
  a.step(0.3f);
  a.step(-0.7f);
  StateRun b(AdamW{}, a.params[0].value().to_vector(), t, 1e-2);
  b.opt->load_state_tensors(a.opt->state_tensors(), a.opt->step_index());
  EXPECT_EQ(a.step(0.11f), b.step(0.11f));
  EXPECT_EQ(a.step(-2.0f), b.step(-2.0f));
}

}  // namespace
}  // namespace mantissa::optim
