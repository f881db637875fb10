// Every MixedPrecision rule rejects bad settings with an error naming the setting. (Words
// that are not values at all, fp16_type: fp16 or on_stuck: panic, are the config parser's to
// refuse: tests/config/test_config.cpp.)
#include <gtest/gtest.h>

#include <functional>

#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/error.hpp"

namespace mantissa::testing {
namespace {

using amp::MixedPrecision;
using numerics::Format;

void expect_error(const MixedPrecision& m, const std::string& fragment) {
  try {
    m.validate();
    FAIL() << "expected an error mentioning: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

MixedPrecision base() {
  MixedPrecision m;
  m.fp16_type = Format::float16;
  m.loss_scaling = amp::DynamicLossScaling{};
  return m;
}

// One bad setting (on top of float16 with dynamic scaling) and the error it must raise.
struct BadSetting {
  std::function<void(MixedPrecision&)> set;
  const char* error;
};

TEST(MixedPrecisionSettings, EachRuleNamesItsSetting) {
  const BadSetting cases[] = {
      {[](MixedPrecision& m) { m.fp16_type = Format::float8_e5m2; },
       "fp16_type: 'float8_e5m2' (expected one of: float16, bfloat16, cbfloat16)"},
      {[](MixedPrecision& m) { m.fp16_type = Format::float32; },
       "fp16_type: 'float32' (expected one of: float16, bfloat16, cbfloat16)"},
      {[](MixedPrecision& m) {
         m.fp16_type = Format::cbfloat16;
         m.loss_scaling = amp::StaticLossScaling{128};
       },
       "loss_scaling_factor: cbfloat16 requires dynamic loss scaling"},
      {[](MixedPrecision& m) {
         m.fp16_type = Format::cbfloat16;
         m.loss_scaling = amp::NoLossScaling{};
       },
       "loss_scaling_factor: cbfloat16 requires dynamic"},
      {[](MixedPrecision& m) {
         m.max_gradient_norm = 1.0;
         m.max_gradient_value = 2.0;
       },
       "max_gradient_norm and max_gradient_value are mutually exclusive"},
      {[](MixedPrecision& m) { m.max_gradient_norm = 0.0; }, "max_gradient_norm: 0"},
      {[](MixedPrecision& m) { m.max_gradient_value = -1.0; }, "max_gradient_value: -1"},
      {[](MixedPrecision& m) { m.precision_opt_level = 3; },
       "precision_opt_level: 3 (expected one of: 0, 1, 2)"},
      {[](MixedPrecision& m) { m.loss_scaling = amp::StaticLossScaling{-2}; },
       "loss_scaling_factor: '-2' is neither \"dynamic\" nor a finite number > 0"},
      {[](MixedPrecision& m) { m.min_loss_scale = 1e-6; },
       "min_loss_scale: 1e-06 is below the smallest allowed, 2^-14"},
      {[](MixedPrecision& m) { m.initial_loss_scale = 1e-5; },
       "initial_loss_scale: 1e-05 must be >= min_loss_scale (6.103515625e-05)"},
      // Not a float32: the scale multiplies the loss in float32.
      {[](MixedPrecision& m) { m.max_loss_scale = 1e39; },
       "max_loss_scale: 1e+39 must be >= min_loss_scale (6.103515625e-05) and a finite float32"},
      {[](MixedPrecision& m) { m.growth_factor = 1.0; },
       "growth_factor: 1 must be a finite number > 1"},
      {[](MixedPrecision& m) { m.backoff_factor = 1.0; }, "backoff_factor: 1 must be in (0, 1)"},
      {[](MixedPrecision& m) { m.hysteresis = 0; }, "hysteresis: 0 must be >= 1"},
      {[](MixedPrecision& m) { m.steps_per_increase = 0; }, "steps_per_increase: 0 must be >= 1"},
      {[](MixedPrecision& m) { m.overflow_tolerance = 1.0; },
       "overflow_tolerance: 1 must be in [0, 1)"},
  };
  for (const BadSetting& c : cases) {
    MixedPrecision m = base();
    c.set(m);
    expect_error(m, c.error);
  }
}

TEST(MixedPrecisionSettings, TheVendorsDefaults) {
  // MixedPrecision(enabled=True, fp16_type="bfloat16", ..., log_loss_scale=None): no loss
  // scaling unless asked for, and the loss scale is logged exactly when scaling is dynamic.
  MixedPrecision m;
  EXPECT_TRUE(m.enabled);
  EXPECT_EQ(m.fp16_type, Format::bfloat16);
  EXPECT_TRUE(std::holds_alternative<amp::NoLossScaling>(m.loss_scaling));
  EXPECT_FALSE(m.logs_loss_scale());
  m.loss_scaling = amp::DynamicLossScaling{};
  EXPECT_TRUE(m.logs_loss_scale());
  m.log_loss_scale = false;
  EXPECT_FALSE(m.logs_loss_scale());
  m.loss_scaling = amp::StaticLossScaling{8};
  m.log_loss_scale = true;
  EXPECT_TRUE(m.logs_loss_scale());
}

TEST(MixedPrecisionSettings, InitialScaleAboveTheMaximumStartsAtTheMaximum) {
  // The vendor's GradScaler starts at min(max_loss_scale, init_scale); the clamp is said once
  // through the log the scaler was given (the trainer's events), never on a terminal.
  MixedPrecision m = base();
  m.initial_loss_scale = 1e9;
  std::vector<std::string> logs;
  ::testing::internal::CaptureStderr();
  auto s = m.make_scaler([&](const std::string& l) { logs.push_back(l); });
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get_scale(), 32768.0);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0], "initial_loss_scale 1e+09 is above max_loss_scale 32768: starting at 32768");
}

TEST(MixedPrecisionSettings, ScalersByFormat) {
  MixedPrecision m = base();
  auto s = m.make_scaler([](const std::string&) {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get_scale(), 32768.0);
  m.fp16_type = Format::cbfloat16;
  s = m.make_scaler([](const std::string&) {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get_scale(), 2147483648.0);  // 2^31
  m.fp16_type = Format::bfloat16;
  std::vector<std::string> logs;
  s = m.make_scaler([&](const std::string& l) { logs.push_back(l); });
  EXPECT_FALSE(s);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("ignored"), std::string::npos);
  EXPECT_FALSE(m.make_scaler());  // without a log the line is dropped: nothing is printed
  m = base();
  m.loss_scaling = amp::StaticLossScaling{1024};
  s = m.make_scaler([](const std::string&) {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get_scale(), 1024.0);
  EXPECT_FALSE(s->options().dynamic);
  m.enabled = false;
  EXPECT_FALSE(m.make_scaler());
  EXPECT_FALSE(m.policy().enabled());
}

// Every setting the scaler takes arrives, each set to a value no default has; clipping does
// not (max_gradient_norm reaches the step as finish_step's argument only).
TEST(MixedPrecisionSettings, EveryScalerSettingReachesTheScaler) {
  MixedPrecision m = base();
  m.initial_loss_scale = 1024.0;
  m.steps_per_increase = 77;
  m.min_loss_scale = 0.25;
  m.max_loss_scale = 4096.0;
  m.overflow_tolerance = 0.125;
  m.growth_factor = 4.0;
  m.backoff_factor = 0.25;
  m.on_stuck = amp::StuckPolicy::keep_going;
  m.hysteresis = 3;
  m.consecutive_hysteresis = true;
  m.max_consecutive_skipped_steps = 9;
  m.max_gradient_norm = 1.5;
  m.validate();
  const auto s = m.make_scaler();
  ASSERT_TRUE(s);
  const amp::GradScalerOptions& o = s->options();
  EXPECT_TRUE(o.dynamic);
  EXPECT_EQ(o.init_scale, 1024.0);
  EXPECT_EQ(o.steps_per_increase, 77);
  EXPECT_EQ(o.min_loss_scale, 0.25);
  EXPECT_EQ(o.max_loss_scale, 4096.0);
  EXPECT_EQ(o.overflow_tolerance, 0.125);
  EXPECT_EQ(o.growth_factor, 4.0);
  EXPECT_EQ(o.backoff_factor, 0.25);
  EXPECT_EQ(o.on_stuck, amp::StuckPolicy::keep_going);
  EXPECT_EQ(o.hysteresis, 3);
  EXPECT_TRUE(o.consecutive_hysteresis);
  EXPECT_EQ(o.max_consecutive_skips, 9);
  EXPECT_FALSE(o.max_gradient_norm);
  EXPECT_EQ(s->get_scale(), 1024.0);

  // Static scaling: the scale, and the non-finite guard's settings.
  m = base();
  m.loss_scaling = amp::StaticLossScaling{128.0};
  m.on_nonfinite = amp::NonFinitePolicy::raise;
  m.max_consecutive_skipped_steps = 5;
  const auto fixed = m.make_scaler();
  ASSERT_TRUE(fixed);
  EXPECT_FALSE(fixed->options().dynamic);
  EXPECT_EQ(fixed->options().static_scale, 128.0);
  EXPECT_EQ(fixed->options().on_nonfinite, amp::NonFinitePolicy::raise);
  EXPECT_EQ(fixed->options().max_consecutive_skips, 5);
  // Unset optional settings keep the format's defaults: 2^15 for float16.
  EXPECT_EQ(fixed->options().init_scale, 32768.0);
}

TEST(MixedPrecisionSettings, WhichSettingsScaleTheLoss) {
  MixedPrecision m = base();
  EXPECT_TRUE(m.scales_loss());
  m.fp16_type = Format::cbfloat16;
  EXPECT_TRUE(m.scales_loss());
  m.fp16_type = Format::bfloat16;
  EXPECT_FALSE(m.scales_loss());
  m.fp16_type = Format::float16;
  m.loss_scaling = amp::NoLossScaling{};
  EXPECT_FALSE(m.scales_loss());
  m.loss_scaling = amp::StaticLossScaling{8.0};
  EXPECT_TRUE(m.scales_loss());
  m.enabled = false;
  EXPECT_FALSE(m.scales_loss());
}

}  // namespace
}  // namespace mantissa::testing
