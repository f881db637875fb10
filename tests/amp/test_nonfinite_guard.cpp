// The non-finite guard of steps whose scale does not adapt (static scaling, and the scale-1
// guard of float32 and bfloat16 runs): a step with an inf/NaN gradient or loss is skipped and
// counted (skip), raises (raise) or is applied (apply); a fixed scale that overflows step
// after step ends the run with advice; gradients that are all zero are said once; a loaded
// scaler state is range-checked. Expected values are worked by hand from SGD's update
// p <- p - lr g with lr 0.1.
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.hpp"
#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/error.hpp"
#include "scaler_fixture.hpp"

namespace mantissa::testing {
namespace {

amp::GradScalerOptions fixed(double scale,
                             amp::NonFinitePolicy policy = amp::NonFinitePolicy::skip) {
  amp::GradScalerOptions o;
  o.dynamic = false;
  o.static_scale = scale;
  o.on_nonfinite = policy;
  return o;
}

TEST(NonFiniteGuard, SkipLeavesTheParametersAndCountsTheStep) {
  ScriptedScaler t(fixed(1.0));
  EXPECT_FALSE(t.step(true));
  EXPECT_EQ(t.p.value().to_vector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(t.opt->step_index(), 0);  // the schedule does not advance
  EXPECT_EQ(t.scaler.num_skipped_steps(), 1);
  // The caller reports the skip (it knows the step's number): the scaler names the parameter.
  EXPECT_EQ(t.scaler.last_nonfinite_params(), (std::vector<std::string>{"w"}));
  EXPECT_TRUE(t.step(false));  // 1 - 0.1 * 0.5
  EXPECT_EQ(t.p.value().to_vector(), (std::vector<float>{0.95f, 0.95f}));
  EXPECT_EQ(t.scaler.num_skipped_steps(), 1);
}

TEST(NonFiniteGuard, StaticScalingIsGuardedToo) {
  ScriptedScaler t(fixed(128.0));
  EXPECT_FALSE(t.step(true));
  EXPECT_EQ(t.p.value().to_vector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(t.scaler.num_skipped_steps(), 1);
  EXPECT_EQ(t.scaler.last_nonfinite_params(), (std::vector<std::string>{"w"}));
  EXPECT_EQ(t.scaler.get_scale(), 128.0);  // a static scale never moves
}

TEST(NonFiniteGuard, RaiseNamesTheStepAndTheParameters) {
  ScriptedScaler t(fixed(1.0, amp::NonFinitePolicy::raise));
  EXPECT_EQ(error_of([&] { t.step(true); }),
            "step 0: non-finite gradients at loss scale 1 in w (precision.on_nonfinite is raise; "
            "skip leaves such steps out)");
  EXPECT_EQ(t.p.value().to_vector(), (std::vector<float>{1.0f, 1.0f}));
}

TEST(NonFiniteGuard, ApplyStepsAnyway) {
  ScriptedScaler t(fixed(1.0, amp::NonFinitePolicy::apply));
  EXPECT_TRUE(t.step(true));
  const std::vector<float> v = t.p.value().to_vector();
  EXPECT_EQ(v[0], 0.95f);
  EXPECT_TRUE(std::isinf(v[1]));  // 1 - 0.1 * inf
  EXPECT_EQ(t.scaler.num_skipped_steps(), 0);
}

TEST(NonFiniteGuard, ANonFiniteLossSkipsWhateverTheGradients) {
  ScriptedScaler t(fixed(1.0));
  t.p.mutable_grad() = tensor::Tensor::from_vector({0.5f, 0.5f}, {2});
  t.scaler.note_nonfinite_loss();
  t.scaler.unscale_(*t.opt);
  EXPECT_FALSE(t.scaler.step_if_finite(*t.opt));
  t.scaler.update();
  EXPECT_EQ(t.scaler.num_skipped_steps(), 1);
  EXPECT_TRUE(t.scaler.last_nonfinite_params().empty());  // the gradients were finite
  EXPECT_TRUE(t.step(false));                             // update() cleared the mark
}

TEST(NonFiniteGuard, AFixedScaleThatKeepsOverflowingRaisesWithAdvice) {
  amp::GradScalerOptions o = fixed(65536.0);
  o.max_consecutive_skips = 3;
  ScriptedScaler t(o);
  EXPECT_FALSE(t.step(true));
  EXPECT_TRUE(t.step(false));  // a finite step restarts the count
  EXPECT_FALSE(t.step(true));
  EXPECT_FALSE(t.step(true));
  EXPECT_EQ(error_of([&] { t.step(true); }),
            "3 steps in a row had non-finite gradients at the static loss scale 2^16: the scale "
            "overflows the half format; lower loss_scaling_factor or set it to dynamic "
            "(precision.max_consecutive_skipped_steps: 3)");
  ScriptedScaler u(fixed(1.0));  // no scaling: the run diverged (the default limit, 20)
  for (int i = 0; i < 19; ++i) EXPECT_FALSE(u.step(true));
  EXPECT_NE(error_of([&] { u.step(true); })
                .find("20 steps in a row had a non-finite loss or gradients at loss scale 1: the "
                      "run diverged"),
            std::string::npos);
}

TEST(NonFiniteGuard, GradientsThatAreAllZeroAreSaidOnce) {
  ScriptedScaler t(fixed(1e-30));
  for (int i = 0; i < 2; ++i) {
    t.p.mutable_grad() = tensor::Tensor::zeros({2});
    t.scaler.unscale_(*t.opt);
    t.scaler.step_if_finite(*t.opt);
    t.scaler.update();
  }
  ASSERT_EQ(t.logs.size(), 1u);
  EXPECT_EQ(t.logs[0],
            "step 0: every gradient is zero at the static loss scale 1e-30: the scaled gradients "
            "underflow to zero in the half format (raise loss_scaling_factor or set it to "
            "dynamic; said once)");
}

TEST(NonFiniteGuard, TheStepGuardOfUnscaledRuns) {
  amp::MixedPrecision m;
  m.enabled = false;
  m.on_nonfinite = amp::NonFinitePolicy::raise;
  const auto guard = m.make_step_guard({});
  ASSERT_TRUE(guard);
  EXPECT_FALSE(guard->options().dynamic);
  EXPECT_EQ(guard->get_scale(), 1.0);
  EXPECT_EQ(guard->options().on_nonfinite, amp::NonFinitePolicy::raise);
  m.enabled = true;
  m.fp16_type = numerics::Format::float16;
  m.loss_scaling = amp::DynamicLossScaling{};
  EXPECT_EQ(error_of([&] { m.validate(); }),
            "on_nonfinite: raise does not apply with loss_scaling_factor: dynamic, which skips "
            "every non-finite step and lowers the scale (on_stuck governs the floor)");
  m.on_nonfinite = amp::NonFinitePolicy::skip;
  EXPECT_TRUE(m.make_step_guard({})->options().dynamic);  // the dynamic scaler itself
}

TEST(NonFiniteGuard, ALoadedStateIsRangeChecked) {
  amp::GradScaler s(amp::GradScalerOptions::defaults_for(numerics::Format::float16));
  amp::ScalerState st;
  st.loss_scale = 2147483648.0;  // cbfloat16's 2^31, above float16's max 2^15
  EXPECT_EQ(error_of([&] { s.load_state(st); }),
            "scaler state: loss_scale 2^31 is outside this run's [2^-14, 2^15] "
            "(min_loss_scale, max_loss_scale)");
  st.loss_scale = -1;
  EXPECT_EQ(error_of([&] { s.load_state(st); }),
            "scaler state: 'loss_scale' is -1 (expected a finite float32 > 0)");
  st.loss_scale = 1024;
  st.num_skipped_steps = -2;
  EXPECT_EQ(error_of([&] { s.load_state(st); }),
            "scaler state: 'num_skipped_steps' is -2 (expected an integer >= 0)");
  st.num_skipped_steps = 0;
  st.overflows_since_rescale = 3;
  EXPECT_EQ(error_of([&] { s.load_state(st); }),
            "scaler state: 'overflows_since_rescale' is 3 (expected at most steps_since_rescale)");
  st.overflows_since_rescale = 0;
  EXPECT_NO_THROW(s.load_state(st));
  EXPECT_EQ(s.get_scale(), 1024.0);
}

}  // namespace
}  // namespace mantissa::testing
