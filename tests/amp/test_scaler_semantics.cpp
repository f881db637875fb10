// A skipped step changes nothing; DLS + GCC clips exactly as clip_grad_norm_; a state round
// trip mid-run continues the identical trajectory.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/optim/clip.hpp"
#include "scaler_fixture.hpp"

namespace mantissa::testing {
namespace {

using autograd::Variable;
using tensor::Tensor;

std::vector<std::uint32_t> bits(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  std::vector<std::uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

TEST(ScalerSemantics, SkippedStepLeavesEverythingAsItWas) {
  Variable p(Tensor::from_vector({1.0f, -2.0f, 3.0f}, {3}), true);
  optim::ParamGroup g;
  g.params = {p};
  g.names = {"w"};
  g.learning_rate = optim::lambda([](std::int64_t k) { return 0.01 * (k + 1); });
  auto opt = optim::make_optimizer(optim::Adam{}, {g});
  amp::GradScaler scaler(amp::GradScalerOptions::defaults_for(numerics::Format::float16));
  auto step_with = [&](std::vector<float> grad) {
    for (float& x : grad) x *= static_cast<float>(scaler.get_scale());
    p.mutable_grad() = Tensor::from_vector(grad, {3});
    const bool stepped = scaler.step(*opt);
    scaler.update();
    return stepped;
  };
  ASSERT_TRUE(step_with({0.1f, 0.2f, -0.3f}));
  const auto params_before = bits(p.value());
  const auto state_before = opt->state_tensors();
  const std::int64_t k_before = opt->step_index();
  ASSERT_FALSE(step_with({0.1f, std::numeric_limits<float>::quiet_NaN(), 0.0f}));
  EXPECT_EQ(bits(p.value()), params_before);
  EXPECT_EQ(opt->step_index(), k_before);
  const auto state_after = opt->state_tensors();
  ASSERT_EQ(state_after.size(), state_before.size());
  for (const auto& [name, t] : state_before) {
    EXPECT_EQ(bits(state_after.at(name)), bits(t)) << name;
  }
  // The next step uses the learning rate the skipped one would have used: lr(k_before).
  EXPECT_EQ(opt->current_learning_rate(), 0.01 * (k_before + 1));
}

// SGD with learning rate 1 on n zeros, and a float16 DLS + GCC scaler (max norm 1).
struct SgdWithClipping {
  Variable p;
  std::unique_ptr<optim::Optimizer> opt;
  amp::GradScaler scaler;
  explicit SgdWithClipping(std::int64_t n)
      : p(Tensor::zeros({n}), true), scaler([] {
          auto o = amp::GradScalerOptions::defaults_for(numerics::Format::float16);
          o.max_gradient_norm = 1.0;
          return o;
        }()) {
    optim::ParamGroup g;
    g.params = {p};
    g.learning_rate = optim::constant(1.0);
    opt = optim::make_optimizer(optim::Sgd{}, {g});
  }
};

TEST(ScalerSemantics, DlsPlusGccClipsExactlyAsClipGradNorm) {
  const std::vector<float> grad = {3.0f, -4.0f, 12.0f, 0.5f};
  // Reference: unscaled gradients clipped by clip_grad_norm_.
  std::vector<Variable> ref = {Variable(Tensor::zeros({4}), true)};
  ref[0].mutable_grad() = Tensor::from_vector(grad, {4});
  const double ref_norm = optim::clip_grad_norm_(ref, 1.0);

  SgdWithClipping t(4);
  Variable& p = t.p;
  auto& opt = t.opt;
  amp::GradScaler& scaler = t.scaler;
  std::vector<float> scaled = grad;
  for (float& x : scaled) x *= 32768.0f;  // exact: powers of two
  p.mutable_grad() = Tensor::from_vector(scaled, {4});
  scaler.step(*opt);
  EXPECT_EQ(scaler.last_grad_norm(), ref_norm);
  // SGD with lr 1 from zero: the parameter is minus the clipped gradient.
  const std::vector<float> got = p.value().to_vector(), want = ref[0].grad().to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], -want[i]) << i;
}

TEST(ScalerSemantics, OverflowDecisionUsesTheUnclippedNorm) {
  SgdWithClipping t(2);
  Variable& p = t.p;
  auto& opt = t.opt;
  amp::GradScaler& scaler = t.scaler;
  // A scaled gradient of 1e37 unscales to 1e37 / 2^15 ~ 3e32: its square overflows float32
  // but the double norm is finite, so the step is taken and clipped to norm 1.
  p.mutable_grad() = Tensor::from_vector({1e37f, 0.0f}, {2});
  EXPECT_TRUE(scaler.step(*opt));
  scaler.update();
  const double unscaled = static_cast<double>(1e37f * (1.0f / 32768.0f));
  EXPECT_EQ(scaler.last_grad_norm(), unscaled);
  EXPECT_NEAR(p.value().to_vector()[0], -1.0f, 1e-6);
  // An infinite gradient is not finite whatever clipping would do.
  p.mutable_grad() = Tensor::from_vector({std::numeric_limits<float>::infinity(), 0.0f}, {2});
  EXPECT_FALSE(scaler.step(*opt));
  scaler.update();
}

// A small regression trained with optimizer_step under float16 + DLS, where some steps
// overflow (a scripted spike); returns the parameters' bits after `steps` steps, optionally
// saving and restoring every piece of state at `restore_at`.
std::vector<std::uint32_t> run(int steps, int restore_at) {
  precision::Autocast cast({numerics::Format::float16, 1});
  Variable w(Tensor::from_vector({0.5f, -0.25f, 0.125f, 1.0f}, {1, 4}), true);
  auto make = [&](const std::map<std::string, Tensor>* state, std::int64_t k) {
    optim::ParamGroup g;
    g.params = {w};
    g.names = {"w"};
    g.learning_rate = optim::cosine_decay(0.05, 0.0, 40);
    auto opt = optim::make_optimizer(optim::AdamW{}, {g});
    if (state) opt->load_state_tensors(*state, k);
    return opt;
  };
  auto opt = make(nullptr, 0);
  amp::GradScalerOptions o = amp::GradScalerOptions::defaults_for(numerics::Format::float16);
  o.init_scale = o.max_loss_scale = 65536.0 * 16;
  o.steps_per_increase = 3;
  auto scaler = std::make_unique<amp::GradScaler>(o);
  const Tensor x = Tensor::from_vector({1, 2, 3, 4, -1, 0.5f, 2, -3}, {2, 4});
  for (int s = 0; s < steps; ++s) {
    if (s == restore_at) {
      const auto state = opt->state_tensors();
      const auto k = opt->step_index();
      const amp::ScalerState ss = scaler->state();
      opt = make(&state, k);
      scaler = std::make_unique<amp::GradScaler>(o);
      scaler->load_state(ss);
    }
    const float spike = s % 7 == 3 ? 3e4f : 1.0f;  // float16 overflow in the backward
    Variable y = autograd::linear(Variable(x), w, Variable());
    Variable loss = autograd::scale(autograd::sum(autograd::mul(y, y)), spike);
    amp::optimizer_step(loss, *opt, scaler.get(), 1.0);
  }
  EXPECT_GT(scaler->num_skipped_steps(), 0);
  return bits(w.value());
}

TEST(ScalerSemantics, StateRoundTripContinuesTheIdenticalTrajectory) {
  EXPECT_EQ(run(20, -1), run(20, 10));
}

}  // namespace
}  // namespace mantissa::testing
