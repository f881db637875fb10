// GradScaler::agree and finish_step's agreement (data parallel): the facts the processes agree
// on decide the skip, the clipping norm and the scale, whatever this process found.
#include <gtest/gtest.h>

#include <cmath>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/error.hpp"
#include "scaler_fixture.hpp"

namespace mantissa::testing {
namespace {

using tensor::Tensor;

amp::GradScalerOptions dynamic_at(double scale) {
  amp::GradScalerOptions o;
  o.init_scale = scale;
  o.max_loss_scale = scale;
  return o;
}

TEST(StepAgreement, TheProcessFactsGoInAndTheJobsDecideTheSkip) {
  ScriptedScaler s(dynamic_at(4.0));
  s.p.mutable_grad() = Tensor::from_vector({12.0f, 16.0f}, {2});  // unscaled: 3, 4
  s.scaler.unscale_(*s.opt);
  amp::GradientFacts seen;
  s.scaler.agree([&](const amp::GradientFacts& mine) {
    seen = mine;
    return amp::GradientFacts{false, mine.sum_squares};  // another process overflowed
  });
  EXPECT_TRUE(seen.finite);
  EXPECT_EQ(seen.sum_squares, 25.0);  // 3^2 + 4^2
  EXPECT_FALSE(s.scaler.step_if_finite(*s.opt));
  s.scaler.update();
  EXPECT_EQ(s.scaler.get_scale(), 2.0);  // backed off, as for an overflow here
  EXPECT_EQ(s.scaler.num_skipped_steps(), 1);
  EXPECT_EQ(s.p.value().to_vector(), (std::vector<float>{1.0f, 1.0f}));  // untouched
}

TEST(StepAgreement, TheAgreedNormClips) {
  amp::GradScalerOptions o = dynamic_at(1.0);
  o.max_gradient_norm = 1.0;
  ScriptedScaler s(o);
  s.p.mutable_grad() = Tensor::from_vector({3.0f, 4.0f}, {2});  // norm 5 here
  s.scaler.unscale_(*s.opt);
  s.scaler.agree([](const amp::GradientFacts&) { return amp::GradientFacts{true, 100.0}; });
  EXPECT_EQ(s.scaler.last_grad_norm(), 10.0);
  EXPECT_TRUE(s.scaler.clip_gradients_and_return_isfinite());
  const float coef = static_cast<float>(1.0 / (10.0 + 1e-6));
  EXPECT_EQ(s.p.grad().to_vector(), (std::vector<float>{3.0f * coef, 4.0f * coef}));
}

TEST(StepAgreement, ComesAfterUnscaleAndBeforeClippingAndSteps) {
  ScriptedScaler s(dynamic_at(1.0));
  const amp::StepAgreement same = [](const amp::GradientFacts& f) { return f; };
  EXPECT_THROW(s.scaler.agree(same), Error);  // nothing unscaled yet
  s.p.mutable_grad() = Tensor::from_vector({1.0f, 1.0f}, {2});
  s.scaler.unscale_(*s.opt);
  s.scaler.step_if_finite(*s.opt);
  EXPECT_THROW(s.scaler.agree(same), Error);  // after the step
}

TEST(StepAgreement, FinishStepReportsAndClipsByTheAgreedNormWithoutAScaler) {
  ScriptedScaler s(dynamic_at(1.0));
  s.p.mutable_grad() = Tensor::from_vector({3.0f, 4.0f}, {2});
  double local = 0;
  const amp::StepReport r =
      amp::finish_step(*s.opt, nullptr, 1.0, std::nullopt, [&](const amp::GradientFacts& mine) {
        local = mine.sum_squares;
        return amp::GradientFacts{true, 400.0};
      });
  EXPECT_DOUBLE_EQ(local, 25.0);
  EXPECT_EQ(r.grad_norm, 20.0);
  // SGD, learning rate 0.1, on the gradients clipped by 1 / (20 + 1e-6).
  const float coef = static_cast<float>(1.0 / (20.0 + 1e-6));
  const std::vector<float> p = s.p.value().to_vector();
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.1f * 3.0f * coef);
  EXPECT_FLOAT_EQ(p[1], 1.0f - 0.1f * 4.0f * coef);
}

}  // namespace
}  // namespace mantissa::testing
