// Scripted overflow sequences give exactly the scale and counter trajectories of the
// algorithm (docs/design.md section 4), derived by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>

#include "mantissa/error.hpp"
#include "scaler_fixture.hpp"

namespace mantissa::testing {
namespace {

using amp::GradScalerOptions;
using amp::StuckPolicy;

GradScalerOptions defaults() {
  return GradScalerOptions::defaults_for(numerics::Format::float16);
}

TEST(ScalerTrajectory, GrowthOnThe2001stCleanStep) {
  GradScalerOptions o = defaults();
  o.max_loss_scale = std::ldexp(1.0, 20);  // room to grow from 2^15
  ScriptedScaler t(o);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(t.step(false));
  // n = 2000 is not > steps_per_increase = 2000: no growth yet.
  EXPECT_EQ(t.scaler.get_scale(), 32768.0);
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 2000);
  t.step(false);  // n = 2001 > 2000: S *= 2, counters reset
  EXPECT_EQ(t.scaler.get_scale(), 65536.0);
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 0);
  EXPECT_EQ(t.scaler.state().overflows_since_rescale, 0);
}

TEST(ScalerTrajectory, PureDefaultsClampAtMax) {
  ScriptedScaler t(defaults());  // init = max = 2^15
  for (int i = 0; i < 2001; ++i) t.step(false);
  EXPECT_EQ(t.scaler.get_scale(), 32768.0);            // grown to 2^16, clamped to 2^15
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 0);  // the growth event reset the window
}

TEST(ScalerTrajectory, ToleranceZeroHalvesOnEveryOverflow) {
  ScriptedScaler t(defaults());
  t.step(false);
  t.step(false);
  EXPECT_FALSE(t.step(true));  // n = 3, o = 1: 1/3 > 0 -> S = 2^14, reset
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 0);
  EXPECT_FALSE(t.step(true));
  EXPECT_EQ(t.scaler.get_scale(), 8192.0);
  EXPECT_EQ(t.scaler.num_skipped_steps(), 2);
}

TEST(ScalerTrajectory, ToleranceQuarter) {
  GradScalerOptions o = defaults();
  o.overflow_tolerance = 0.25;
  ScriptedScaler t(o);
  for (int i = 0; i < 3; ++i) t.step(false);
  t.step(true);  // n = 4, o = 1: 0.25 is not > 0.25 -> unchanged
  EXPECT_EQ(t.scaler.get_scale(), 32768.0);
  EXPECT_EQ(t.scaler.state().overflows_since_rescale, 1);
  t.step(false);  // n = 5, o = 1: 0.2
  t.step(true);   // n = 6, o = 2: 0.333 > 0.25 -> S = 2^14, reset
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  EXPECT_EQ(t.scaler.state().steps_since_rescale, 0);
  t.step(true);  // n = 1, o = 1: 1 > 0.25 -> S = 2^13
  EXPECT_EQ(t.scaler.get_scale(), 8192.0);
  EXPECT_EQ(t.scaler.num_skipped_steps(), 3);
}

GradScalerOptions near_minimum(StuckPolicy policy) {
  GradScalerOptions o = defaults();
  o.init_scale = std::ldexp(1.0, -13);
  o.on_stuck = policy;
  return o;
}

TEST(ScalerTrajectory, StuckAtMinimumRaises) {
  ScriptedScaler t(near_minimum(StuckPolicy::raise));
  t.step(true);  // 2^-13 -> 2^-14, the minimum
  EXPECT_EQ(t.scaler.get_scale(), std::ldexp(1.0, -14));
  try {
    t.step(true);  // would be 2^-15
    FAIL() << "expected the stuck-at-minimum error";
  } catch (const amp::StepGuardError& e) {
    EXPECT_NE(std::string(e.what()).find("stuck at its minimum"), std::string::npos);
    // Typed, with the facts of the step that ended the run (issue 27: the trainer records it).
    EXPECT_EQ(e.why(), amp::GuardStop::loss_scale_floor);
    EXPECT_EQ(e.loss_scale(), std::ldexp(1.0, -14)) << "the scale that step used";
    EXPECT_FALSE(e.refused_update());
    EXPECT_EQ(e.tensors(), std::vector<std::string>{"w"}) << "the parameter that overflowed";
  }
  EXPECT_EQ(t.scaler.num_skipped_steps(), 2) << "the step it stopped at was skipped";
}

TEST(ScalerTrajectory, StuckAtMinimumKeepGoing) {
  ScriptedScaler t(near_minimum(StuckPolicy::keep_going));
  t.step(true);
  t.step(true);
  t.step(true);
  EXPECT_EQ(t.scaler.get_scale(), std::ldexp(1.0, -14));
  EXPECT_EQ(t.scaler.num_skipped_steps(), 3);
  ASSERT_FALSE(t.logs.empty());
  EXPECT_NE(t.logs.back().find("continuing at the minimum"), std::string::npos);
  // Issue 27: said the first time and at 10, 100, ... times, never once a step.
  const auto said = [&] {
    return std::count_if(t.logs.begin(), t.logs.end(), [](const std::string& l) {
      return l.find("continuing at the minimum") != std::string::npos;
    });
  };
  const auto before = said();
  for (int i = 0; i < 120; ++i) t.step(true);
  EXPECT_EQ(said() - before, 2);  // the 10th and the 100th time
  EXPECT_NE(t.logs.back().find("(100 times so far)"), std::string::npos) << t.logs.back();
}

TEST(ScalerTrajectory, StuckAtMinimumFallsBack) {
  ScriptedScaler t(near_minimum(StuckPolicy::fall_back));
  t.step(true);
  t.step(true);
  EXPECT_EQ(t.scaler.take_fallback(), numerics::Format::bfloat16);
  EXPECT_FALSE(t.scaler.take_fallback().has_value());  // said once
  EXPECT_EQ(t.scaler.get_scale(), 1.0);                // scaling stopped
  EXPECT_TRUE(t.scaler.state().scaling_stopped);
  for (int i = 0; i < 3000; ++i) t.step(false);
  EXPECT_EQ(t.scaler.get_scale(), 1.0);  // no growth after the fall-back
  EXPECT_FALSE(t.step(true));            // non-finite steps are still skipped
}

// DeepSpeed's DynamicLossScaler (and Megatron's DynamicGradScaler) with hysteresis h: an
// overflow event decreases the scale only when the allowance is down to 1, else it spends one
// and restarts the growth window; a decrease does not refill it. The refill comes when the
// scale grows (consecutive_hysteresis false, the default of both) or on every clean step
// (consecutive_hysteresis true).
GradScalerOptions with_hysteresis(bool consecutive) {
  GradScalerOptions o = defaults();
  o.max_loss_scale = std::ldexp(1.0, 20);
  o.steps_per_increase = 2;
  o.hysteresis = 2;
  o.consecutive_hysteresis = consecutive;
  return o;
}

TEST(ScalerTrajectory, HysteresisRefilledOnGrowth) {
  ScriptedScaler t(with_hysteresis(false));
  EXPECT_FALSE(t.step(true));  // event 1: tolerated (2 -> 1), window restarts
  EXPECT_EQ(t.scaler.get_scale(), 32768.0);
  EXPECT_EQ(t.scaler.state().hysteresis_left, 1);
  t.step(false);  // a clean step does not refill in this form
  EXPECT_EQ(t.scaler.state().hysteresis_left, 1);
  t.step(true);  // n = 2, o = 1: an event with the allowance spent: S halves
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  EXPECT_EQ(t.scaler.state().hysteresis_left, 1);  // not refilled by the decrease
  t.step(true);                                    // the next event halves again
  EXPECT_EQ(t.scaler.get_scale(), 8192.0);
  t.step(false);
  t.step(false);
  t.step(false);  // n = 3 > steps_per_increase 2: growth, and the allowance is refilled
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  EXPECT_EQ(t.scaler.state().hysteresis_left, 2);
  t.step(true);  // tolerated again
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  EXPECT_EQ(t.scaler.num_skipped_steps(), 4);  // every overflowing step was skipped
}

TEST(ScalerTrajectory, ConsecutiveHysteresisRefilledOnEveryCleanStep) {
  ScriptedScaler t(with_hysteresis(true));
  t.step(true);  // tolerated (2 -> 1)
  EXPECT_EQ(t.scaler.state().hysteresis_left, 1);
  t.step(false);  // refilled by the clean step
  EXPECT_EQ(t.scaler.state().hysteresis_left, 2);
  t.step(true);  // n = 2, o = 1: tolerated again (2 -> 1); the other form halves here
  EXPECT_EQ(t.scaler.get_scale(), 32768.0);
  EXPECT_EQ(t.scaler.state().hysteresis_left, 1);
  t.step(true);  // a second consecutive event: S halves
  EXPECT_EQ(t.scaler.get_scale(), 16384.0);
  t.step(true);  // and again: no refill without a clean step
  EXPECT_EQ(t.scaler.get_scale(), 8192.0);
  t.step(false);
  EXPECT_EQ(t.scaler.state().hysteresis_left, 2);
}

TEST(ScalerTrajectory, GrowthAndBackoffFactors) {
  GradScalerOptions o = defaults();
  o.init_scale = 1024.0;
  o.max_loss_scale = std::ldexp(1.0, 20);
  o.steps_per_increase = 2;
  o.growth_factor = 4.0;
  o.backoff_factor = 0.25;
  ScriptedScaler t(o);
  t.step(true);  // 1024 * 0.25
  EXPECT_EQ(t.scaler.get_scale(), 256.0);
  t.step(false);
  t.step(false);
  EXPECT_EQ(t.scaler.get_scale(), 256.0);
  t.step(false);  // n = 3 > 2: 256 * 4
  EXPECT_EQ(t.scaler.get_scale(), 1024.0);
}

TEST(ScalerTrajectory, SkippedStepsNameTheParameters) {
  ScriptedScaler t(defaults());
  t.step(true);
  EXPECT_EQ(t.scaler.last_nonfinite_params(), std::vector<std::string>{"w"});
  // The caller reports the skip (it knows the step's number: the trainer's line and metrics
  // record, tests/report/test_metrics_log.cpp); the scaler's log is for a stuck scale.
  EXPECT_TRUE(t.logs.empty());
}

}  // namespace
}  // namespace mantissa::testing
