// The GradScaler with several optimizers, against PyTorch's documented semantics (AMP
// examples, "Working with Multiple Models, Losses, and Optimizers"; GradScaler.unscale_,
// step and update): each optimizer is unscaled at most once and stepped at most once per
// iteration, "each optimizer checks its gradients for infs/NaNs and makes an independent
// decision whether or not to skip the step", and update() runs once after every optimizer
// was stepped, lowering the scale when any optimizer's step was skipped. Values are derived
// by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/error.hpp"

namespace mantissa::testing {
namespace {

using autograd::Variable;
using tensor::Tensor;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Two one-element parameters, each with its own SGD (lr 1) from 0: after a step the
// parameter is minus the gradient it applied.
struct TwoOptimizers {
  Variable a{Tensor::zeros({1}), true}, b{Tensor::zeros({1}), true};
  std::unique_ptr<optim::Optimizer> opt_a, opt_b;
  amp::GradScaler scaler;
  explicit TwoOptimizers(amp::GradScalerOptions o) : scaler(std::move(o)) {
    opt_a = make(a, "a");
    opt_b = make(b, "b");
  }
  static std::unique_ptr<optim::Optimizer> make(const Variable& p, const std::string& name) {
    optim::ParamGroup g;
    g.params = {p};
    g.names = {name};
    g.learning_rate = optim::constant(1.0);
    return optim::make_optimizer(optim::Sgd{}, {g});
  }
  // Gradients as a scaled backward would leave them: S times the unscaled values.
  void set_grads(float ga, float gb) {
    const auto s = static_cast<float>(scaler.get_scale());
    a.mutable_grad() = Tensor::from_vector({ga * s}, {1});
    b.mutable_grad() = Tensor::from_vector({gb * s}, {1});
  }
  float value(const Variable& p) const { return p.value().to_vector()[0]; }
};

amp::GradScalerOptions dynamic(std::int64_t steps_per_increase = 2000) {
  amp::GradScalerOptions o = amp::GradScalerOptions::defaults_for(numerics::Format::float16);
  o.max_loss_scale = std::ldexp(1.0, 20);
  o.steps_per_increase = steps_per_increase;
  return o;
}

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    FAIL() << "expected an error mentioning: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(MultiOptimizer, EachOptimizerDecidesOnItsOwnGradientsAndOneUpdateFollows) {
  TwoOptimizers t(dynamic());
  t.set_grads(0.5f, kInf);  // b overflows, a does not
  EXPECT_TRUE(t.scaler.step(*t.opt_a));
  EXPECT_FALSE(t.scaler.step(*t.opt_b));
  EXPECT_FALSE(t.scaler.last_step_finite());
  t.scaler.update();
  EXPECT_EQ(t.value(t.a), -0.5f);              // a stepped with its unscaled gradient
  EXPECT_EQ(t.value(t.b), 0.0f);               // b did not
  EXPECT_EQ(t.opt_a->step_index(), 1);         // a's schedule advanced
  EXPECT_EQ(t.opt_b->step_index(), 0);         // b's did not
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);    // one overflow in the iteration: 2^15 / 2
  EXPECT_EQ(t.scaler.num_skipped_steps(), 1);  // b's step
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 0);
  EXPECT_EQ(t.scaler.last_nonfinite_params(), std::vector<std::string>{"b"});
}

TEST(MultiOptimizer, AnIterationCountsOnceWhateverTheNumberOfOptimizers) {
  // steps_per_increase 3: the scale grows at the 4th update (n = 4 > 3), however many
  // optimizers each iteration stepped.
  TwoOptimizers t(dynamic(3));
  for (int i = 1; i <= 4; ++i) {
    t.set_grads(0.25f, 0.25f);
    t.scaler.step(*t.opt_a);
    t.scaler.step(*t.opt_b);
    t.scaler.update();
    EXPECT_EQ(t.scaler.get_scale(), i < 4 ? 32768.0 : 65536.0) << "iteration " << i;
  }
}

TEST(MultiOptimizer, TheStagesOfEachOptimizer) {
  TwoOptimizers t(dynamic());
  using amp::OptimizerStage;
  t.set_grads(1.0f, 1.0f);
  EXPECT_EQ(t.scaler.stage(*t.opt_a), OptimizerStage::ready);
  t.scaler.unscale_(*t.opt_a);
  EXPECT_EQ(t.scaler.stage(*t.opt_a), OptimizerStage::unscaled);
  EXPECT_EQ(t.scaler.stage(*t.opt_b), OptimizerStage::ready);
  // A second unscale_ of the same optimizer in one iteration raises (PyTorch: RuntimeError
  // "unscale_() has already been called on this optimizer since the last update()").
  expect_error([&] { t.scaler.unscale_(*t.opt_a); }, "unscale_: already called");
  // step_if_finite needs the gradients unscaled first.
  expect_error([&] { t.scaler.step_if_finite(*t.opt_b); }, "unscale_ this optimizer first");
  EXPECT_TRUE(t.scaler.step(*t.opt_b));  // step() unscales a ready optimizer itself
  EXPECT_EQ(t.value(t.b), -1.0f);
  EXPECT_EQ(t.scaler.stage(*t.opt_b), OptimizerStage::stepped);
  expect_error([&] { t.scaler.unscale_(*t.opt_b); }, "after step()");
  expect_error([&] { t.scaler.step(*t.opt_b); }, "step: already called");
  EXPECT_TRUE(t.scaler.step_if_finite(*t.opt_a));
  t.scaler.update();
  // update() readies every optimizer again; an update() with nothing recorded raises
  // (PyTorch: "No inf checks were recorded prior to update.").
  EXPECT_EQ(t.scaler.stage(*t.opt_a), OptimizerStage::ready);
  EXPECT_EQ(t.scaler.stage(*t.opt_b), OptimizerStage::ready);
  expect_error([&] { t.scaler.update(); }, "update: no optimizer was unscaled");
}

TEST(MultiOptimizer, OptimizerStepClipsByTheGlobalNormOfEveryOptimizer) {
  // Unscaled gradients 3 (a) and 4 (b): global norm 5 (clip_grad_norm_ over all parameters
  // "as if concatenated into a single vector"), max norm 1: each is multiplied by
  // 1 / (5 + 1e-6); SGD with lr 1 from 0 leaves minus the clipped gradient.
  TwoOptimizers t(dynamic());
  t.set_grads(3.0f, 4.0f);
  const amp::StepReport r =
      amp::finish_step({t.opt_a.get(), t.opt_b.get()}, &t.scaler, /*max_gradient_norm=*/1.0);
  EXPECT_TRUE(r.stepped);
  EXPECT_EQ(r.grad_norm, 5.0);
  EXPECT_EQ(r.loss_scale, 32768.0);
  const float coef = static_cast<float>(1.0 / (5.0 + 1e-6));
  EXPECT_EQ(t.value(t.a), -3.0f * coef);
  EXPECT_EQ(t.value(t.b), -4.0f * coef);
  EXPECT_FALSE(t.a.grad().defined() && t.a.grad().to_vector()[0] != 0.0f);  // zero_grad ran
}

TEST(MultiOptimizer, OptimizerStepWithAnOverflowSkipsOnlyThatOptimizer) {
  // b overflows: b skips, a steps; a's gradient 3 is clipped by the norm of the gradients
  // that are applied (3, a's alone): 3 * 1 / (3 + 1e-6). One update halves the scale.
  TwoOptimizers t(dynamic());
  t.set_grads(3.0f, kInf);
  const amp::StepReport r = amp::finish_step({t.opt_a.get(), t.opt_b.get()}, &t.scaler, 1.0);
  EXPECT_FALSE(r.stepped);
  EXPECT_EQ(r.skipped_steps, 1);
  EXPECT_EQ(r.nonfinite_params, std::vector<std::string>{"b"});
  EXPECT_EQ(t.value(t.a), -3.0f * static_cast<float>(1.0 / (3.0 + 1e-6)));
  EXPECT_EQ(t.value(t.b), 0.0f);
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
}

TEST(MultiOptimizer, OptimizerStepScalesTheLossAndRunsTheBackward) {
  // loss = 2a + 3b: gradients 2 and 3, scaled by S in the backward and unscaled after; SGD
  // lr 1 from 0 leaves -2 and -3.
  TwoOptimizers t(dynamic());
  const Variable loss = autograd::add(autograd::scale(autograd::sum(t.a), 2.0f),
                                      autograd::scale(autograd::sum(t.b), 3.0f));
  amp::optimizer_step(loss, {t.opt_a.get(), t.opt_b.get()}, &t.scaler);
  EXPECT_EQ(t.value(t.a), -2.0f);
  EXPECT_EQ(t.value(t.b), -3.0f);
}

TEST(MultiOptimizer, StateDictAsTheVendors) {
  amp::GradScalerOptions o = dynamic(3);
  TwoOptimizers t(o);
  t.set_grads(kInf, 1.0f);
  t.scaler.step(*t.opt_a);
  t.scaler.step(*t.opt_b);
  t.scaler.update();  // S = 2^14, skipped 1
  t.set_grads(1.0f, 1.0f);
  t.scaler.step(*t.opt_a);
  t.scaler.step(*t.opt_b);
  t.scaler.update();  // n = 1
  // Dynamic: the vendor's loss_scale, steps_since_rescale, overflows_since_rescale,
  // num_skipped_steps, and mantissa's hysteresis_left, scaling_stopped.
  const amp::ScalerStateDict d = t.scaler.state_dict();
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(std::get<double>(d.at("loss_scale")), 16384.0);
  EXPECT_EQ(std::get<std::int64_t>(d.at("steps_since_rescale")), 1);
  EXPECT_EQ(std::get<std::int64_t>(d.at("overflows_since_rescale")), 0);
  EXPECT_EQ(std::get<std::int64_t>(d.at("num_skipped_steps")), 1);
  EXPECT_EQ(std::get<std::int64_t>(d.at("hysteresis_left")), 1);
  EXPECT_FALSE(std::get<bool>(d.at("scaling_stopped")));
  amp::GradScaler restored(o);
  restored.load_state_dict(d);
  EXPECT_EQ(restored.get_scale(), 16384.0);
  EXPECT_EQ(restored.state().steps_since_rescale, 1);
  EXPECT_EQ(restored.num_skipped_steps(), 1);
  amp::ScalerStateDict missing = d;
  missing.erase("num_skipped_steps");
  expect_error([&] { restored.load_state_dict(missing); },
               "scaler state: missing 'num_skipped_steps'");
  amp::ScalerStateDict mistyped = d;
  mistyped["loss_scale"] = std::int64_t{3};
  expect_error([&] { restored.load_state_dict(mistyped); }, "'loss_scale' has the wrong type");
  // A key of no field (a misspelling, or another library's dict) is refused, not ignored.
  amp::ScalerStateDict extra = d;
  extra["growth_tracker"] = std::int64_t{7};
  expect_error([&] { restored.load_state_dict(extra); },
               "scaler state: unknown key 'growth_tracker' (expected loss_scale, "
               "steps_since_rescale, overflows_since_rescale, num_skipped_steps, "
               "hysteresis_left, scaling_stopped)");
  EXPECT_EQ(restored.state().steps_since_rescale, 1);  // unchanged
  expect_error([&] { (void)amp::decode_scaler_state(R"({"loss_scale": 2.0, "loss_scal": 4.0})"); },
               "scaler state: unknown key 'loss_scal'");
  // Static scaling: {loss_scale} alone.
  amp::GradScalerOptions fixed;
  fixed.dynamic = false;
  fixed.static_scale = 128.0;
  amp::GradScaler s(fixed);
  const amp::ScalerStateDict sd = s.state_dict();
  ASSERT_EQ(sd.size(), 1u);
  EXPECT_EQ(std::get<double>(sd.at("loss_scale")), 128.0);
  amp::ScalerStateDict dynamic_at_128 = d;
  dynamic_at_128["loss_scale"] = 128.0;
  s.load_state_dict(dynamic_at_128);  // a dynamic scaler's dict: its keys are known, not refused
  EXPECT_EQ(s.get_scale(), 128.0);
}

TEST(MultiOptimizer, StaticScalingStepsWhateverTheGradientsHoldAndDoesNotClip) {
  // The vendor: static scaling is always "finite" and ignores max_gradient_norm.
  amp::GradScalerOptions fixed;
  fixed.dynamic = false;
  fixed.static_scale = 4.0;
  fixed.max_gradient_norm = 1.0;
  TwoOptimizers t(fixed);
  t.set_grads(3.0f, 4.0f);
  EXPECT_TRUE(t.scaler.step(*t.opt_a));
  EXPECT_TRUE(t.scaler.step(*t.opt_b));
  t.scaler.update();
  EXPECT_EQ(t.value(t.a), -3.0f);  // unscaled (12 / 4), not clipped
  EXPECT_EQ(t.value(t.b), -4.0f);
  EXPECT_EQ(t.scaler.get_scale(), 4.0);
}

TEST(MultiOptimizer, ANullOrRepeatedOptimizerIsRefusedBeforeTheBackward) {
  // The library audit of 2026-11-28: a null entry was dereferenced (a crash); the same
  // optimizer twice failed inside unscale_ with a message about unscale_.
  const Variable w(Tensor::full({2}, 1.0f), true);
  auto opt = optim::make_optimizer(optim::Sgd{}, {w}, 0.1);
  const Variable loss = autograd::sum(autograd::mul(w, w));
  std::string e;
  try {
    amp::optimizer_step(loss, std::vector<optim::Optimizer*>{opt.get(), nullptr}, nullptr);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("optimizer 1 of the list is null"), std::string::npos) << e;
  EXPECT_FALSE(w.grad().defined());  // refused before the backward
  e.clear();
  try {
    amp::optimizer_step(loss, std::vector<optim::Optimizer*>{opt.get(), opt.get()}, nullptr);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("listed twice (positions 0 and 1)"), std::string::npos) << e;
  EXPECT_EQ(w.value().to_vector(), (std::vector<float>{1.0f, 1.0f}));
}

TEST(MultiOptimizer, ScalingALossOfMoreThanOneElementIsRefused) {
  const amp::GradScaler scaler("dynamic");
  const Variable loss(Tensor::full({2, 2}, 1.0f), true);
  std::string e;
  try {
    (void)scaler.scale(loss);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("the loss has shape [2, 2] (expected one element"), std::string::npos) << e;
}

}  // namespace
}  // namespace mantissa::testing
