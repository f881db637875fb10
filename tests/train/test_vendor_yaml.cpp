// The vendor's YAML keys (tests/train/compat/*.yaml) parse into the values the vendor gives
// them (docs/compatibility.md), and their misuses are refused by name.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "vendor_configs.hpp"

namespace mantissa::train {
namespace {

using config::LoopConfig;
using numerics::Format;

void expect_error(const std::string& file, std::size_t doc, const std::vector<std::string>& set,
                  const std::string& fragment) {
  try {
    compat_config(file, doc, set);
    FAIL() << "expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(VendorYaml, PrecisionKeys) {
  const amp::MixedPrecision m = compat_config("precision.yaml", 0).precision;
  EXPECT_TRUE(m.enabled);
  EXPECT_EQ(m.fp16_type, Format::cbfloat16);
  EXPECT_TRUE(std::holds_alternative<amp::DynamicLossScaling>(m.loss_scaling));
  EXPECT_EQ(m.initial_loss_scale, 1e12);
  EXPECT_EQ(m.steps_per_increase, 1000);
  EXPECT_EQ(m.min_loss_scale, 1e-4);
  EXPECT_EQ(m.max_loss_scale, 1e9);
  EXPECT_EQ(m.max_gradient_norm, 1.0);
  EXPECT_EQ(m.precision_opt_level, 0);
  EXPECT_EQ(m.log_loss_scale, false);
  EXPECT_FALSE(m.logs_loss_scale());
  EXPECT_EQ(m.overflow_tolerance, 0.05);
  EXPECT_EQ(m.growth_factor, 4.0);
  EXPECT_EQ(m.backoff_factor, 0.25);
  EXPECT_EQ(m.on_stuck, amp::StuckPolicy::keep_going);
  EXPECT_EQ(m.hysteresis, 2);
  EXPECT_TRUE(m.consecutive_hysteresis);
  // initial_loss_scale above max_loss_scale starts at the maximum, said once.
  std::vector<std::string> logs;
  const auto scaler = m.make_scaler([&](const std::string& l) { logs.push_back(l); });
  ASSERT_TRUE(scaler);
  EXPECT_EQ(scaler->get_scale(), 1e9);
  EXPECT_EQ(scaler->options().growth_factor, 4.0);
  ASSERT_EQ(logs.size(), 1u);

  const amp::MixedPrecision fixed = compat_config("precision.yaml", 1).precision;
  EXPECT_EQ(std::get<amp::StaticLossScaling>(fixed.loss_scaling).scale, 128.0);
  EXPECT_EQ(fixed.max_gradient_value, 2.0);
  EXPECT_FALSE(fixed.logs_loss_scale());  // the vendor's default: log when dynamic

  const TrainerConfig tf = compat_config("precision.yaml", 2);
  EXPECT_TRUE(std::holds_alternative<amp::DynamicLossScaling>(tf.precision.loss_scaling));
  EXPECT_TRUE(tf.precision.logs_loss_scale());
  ASSERT_EQ(tf.notes.size(), 1u);
  EXPECT_NE(tf.notes[0].find("tf_dynamic is the TensorFlow spelling"), std::string::npos);

  // The vendor's defaults: bfloat16, POL 1 (null is "unset"), no loss scaling.
  const amp::MixedPrecision d = compat_config("precision.yaml", 3).precision;
  EXPECT_EQ(d.fp16_type, Format::bfloat16);
  EXPECT_EQ(d.precision_opt_level, 1);
  EXPECT_FALSE(d.initial_loss_scale.has_value());
  EXPECT_TRUE(std::holds_alternative<amp::NoLossScaling>(d.loss_scaling));
}

TEST(VendorYaml, LegacyKeysMoveToPrecisionWithANote) {
  const TrainerConfig c = compat_config("legacy.yaml", 0);
  const amp::MixedPrecision& m = c.precision;
  EXPECT_TRUE(m.enabled);
  EXPECT_EQ(m.fp16_type, Format::float16);
  EXPECT_TRUE(std::holds_alternative<amp::DynamicLossScaling>(m.loss_scaling));
  EXPECT_EQ(m.initial_loss_scale, 1024.0);
  EXPECT_EQ(m.steps_per_increase, 10);
  EXPECT_EQ(m.min_loss_scale, 1.0);
  EXPECT_EQ(m.max_loss_scale, 65536.0);
  EXPECT_EQ(m.max_gradient_norm, 1.0);
  EXPECT_EQ(m.log_loss_scale, true);
  EXPECT_EQ(m.precision_opt_level, 2);
  EXPECT_EQ(c.optimizer.learning_rate, 1e-3);
  const std::vector<std::string> want = {
      "trainer.init.model.mixed_precision is deprecated: use trainer.init.precision.enabled",
      "trainer.init.model.fp16_type is deprecated: use trainer.init.precision.fp16_type",
      "runconfig.precision_opt_level is deprecated: use trainer.init.precision.precision_opt_level",
      "trainer.init.optimizer.AdamW.loss_scaling_factor is deprecated: use "
      "trainer.init.precision.loss_scaling_factor",
      "trainer.init.optimizer.AdamW.initial_loss_scale is deprecated: use "
      "trainer.init.precision.initial_loss_scale",
      "trainer.init.optimizer.AdamW.steps_per_increase is deprecated: use "
      "trainer.init.precision.steps_per_increase",
      "trainer.init.optimizer.AdamW.min_loss_scale is deprecated: use "
      "trainer.init.precision.min_loss_scale",
      "trainer.init.optimizer.AdamW.max_loss_scale is deprecated: use "
      "trainer.init.precision.max_loss_scale",
      "trainer.init.optimizer.AdamW.max_gradient_norm is deprecated: use "
      "trainer.init.precision.max_gradient_norm",
      "trainer.init.optimizer.AdamW.log_summaries is deprecated: use "
      "trainer.init.precision.log_loss_scale"};
  EXPECT_EQ(c.notes, want);

  const TrainerConfig b = compat_config("legacy.yaml", 1);
  EXPECT_EQ(b.precision.fp16_type, Format::bfloat16);
  EXPECT_EQ(b.precision.max_gradient_value, 0.5);
  EXPECT_EQ(b.notes.at(1),
            "trainer.init.model.use_bfloat16 is deprecated: use trainer.init.precision.fp16_type: "
            "bfloat16");
  EXPECT_EQ(compat_config("legacy.yaml", 1, {"trainer.init.model.use_bfloat16=false"})
                .precision.fp16_type,
            Format::float16);
  // A key and its deprecated spelling together: set one.
  expect_error("legacy.yaml", 0, {"trainer.init.precision.enabled=true"},
               "trainer.init.model.mixed_precision: the deprecated spelling of "
               "trainer.init.precision.enabled, which is set too");
  expect_error("legacy.yaml", 1, {"trainer.init.model.fp16_type=float16"},
               "trainer.init.model.fp16_type: the deprecated spelling of "
               "trainer.init.precision.fp16_type, which is set too");
  expect_error("legacy.yaml", 0, {"runconfig.max_steps=3"},
               "runconfig.max_steps: unknown key (the legacy runconfig section is read for "
               "precision_opt_level only");
}

template <class S>
const S& settings(const std::string& file, std::size_t doc) {
  static TrainerConfig c;
  c = compat_config(file, doc);
  return std::get<S>(c.optimizer.settings);
}

TEST(VendorYaml, OptimizerArguments) {
  const auto& sgd = settings<optim::Sgd>("optimizers.yaml", 0);
  EXPECT_EQ(sgd.momentum, 0.9);
  EXPECT_EQ(sgd.weight_decay, 1e-4);
  EXPECT_TRUE(sgd.nesterov);
  EXPECT_TRUE(sgd.maximize);
  const auto& adam = settings<optim::Adam>("optimizers.yaml", 1);
  EXPECT_EQ(adam.beta1, 0.8);
  EXPECT_EQ(adam.beta2, 0.99);
  EXPECT_EQ(adam.eps, 1e-7);
  EXPECT_TRUE(adam.amsgrad);
  const auto& adamw = settings<optim::AdamW>("optimizers.yaml", 2);
  EXPECT_FALSE(adamw.bias_correction);  // correct_bias: false
  EXPECT_TRUE(adamw.amsgrad);
  EXPECT_EQ(compat_config("optimizers.yaml", 2).optimizer.learning_rate, 2e-3);
  EXPECT_TRUE(settings<optim::Adadelta>("optimizers.yaml", 3).maximize);
  const auto& af = settings<optim::Adafactor>("optimizers.yaml", 4);
  EXPECT_EQ(af.eps1, 1e-29);
  EXPECT_EQ(af.eps2, 2e-3);
  EXPECT_EQ(af.clip_threshold, 2.0);
  EXPECT_EQ(af.decay_rate, -0.5);
  EXPECT_EQ(af.beta1, 0.9);
  EXPECT_FALSE(af.scale_parameter);
  EXPECT_TRUE(af.relative_step);
  EXPECT_TRUE(af.warmup_init);
  const auto& adagrad = settings<optim::Adagrad>("optimizers.yaml", 5);
  EXPECT_EQ(adagrad.initial_accumulator_value, 0.2);
  EXPECT_TRUE(adagrad.maximize);
  EXPECT_TRUE(settings<optim::Adamax>("optimizers.yaml", 6).maximize);
  EXPECT_EQ(settings<optim::Adamax>("optimizers.yaml", 6).beta1, 0.8);
  const auto& asgd = settings<optim::Asgd>("optimizers.yaml", 7);
  EXPECT_EQ(asgd.t0, 100.0);
  EXPECT_TRUE(asgd.maximize);
  const auto& lamb = settings<optim::Lamb>("optimizers.yaml", 8);
  EXPECT_TRUE(lamb.adam);
  EXPECT_EQ(lamb.beta2, 0.99);
  EXPECT_EQ(settings<optim::Lion>("optimizers.yaml", 9).beta1, 0.95);
  const auto& muon = settings<optim::Muon>("optimizers.yaml", 10);
  EXPECT_EQ(muon.weight_decay, 0.02);
  EXPECT_EQ(muon.momentum, 0.9);
  EXPECT_FALSE(muon.nesterov);
  EXPECT_EQ(muon.ns_steps, 3);
  EXPECT_EQ(settings<optim::NAdam>("optimizers.yaml", 11).momentum_decay, 5e-3);
  EXPECT_EQ(settings<optim::RAdam>("optimizers.yaml", 12).eps, 1e-7);
  EXPECT_TRUE(settings<optim::RmsProp>("optimizers.yaml", 13).centered);
  const auto& rprop = settings<optim::Rprop>("optimizers.yaml", 14);
  EXPECT_EQ(rprop.etaminus, 0.4);
  EXPECT_EQ(rprop.etaplus, 1.3);
  EXPECT_EQ(rprop.step_size_min, 1e-5);
  EXPECT_EQ(rprop.step_size_max, 10.0);
  // Without learning_rate or lr: the vendor's default of the optimizer (Muon 0.02).
  EXPECT_EQ(compat_config("optimizers.yaml", 10, {"trainer.init.optimizer={Muon: {}}"})
                .optimizer.learning_rate,
            0.02);
}

TEST(VendorYaml, OptimizerArgumentsAreRefusedByName) {
  expect_error("optimizers.yaml", 1,
               {"trainer.init.optimizer={Adam: {betas: [0.9, 0.99], beta1: 0.8}}"},
               "trainer.init.optimizer.Adam.betas: sets beta1 and beta2, which are given too");
  expect_error("optimizers.yaml", 1, {"trainer.init.optimizer={Adam: {betas: [0.9]}}"},
               "trainer.init.optimizer.Adam.betas: expected a list of two numbers [beta1, beta2]");
  expect_error("optimizers.yaml", 1, {"trainer.init.optimizer={Adam: {betas: [0.9, 1.5]}}"},
               "trainer.init.optimizer.Adam.beta2: 1.5 must be in [0, 1)");
  expect_error("optimizers.yaml", 1,
               {"trainer.init.optimizer={Adam: {lr: 0.1, learning_rate: 0.1}}"},
               "trainer.init.optimizer.Adam.lr: also given as learning_rate");
  expect_error("optimizers.yaml", 2,
               {"trainer.init.optimizer={AdamW: {correct_bias: true, bias_correction: true}}"},
               "trainer.init.optimizer.AdamW.correct_bias: also given as bias_correction");
  expect_error("optimizers.yaml", 4, {"trainer.init.optimizer.Adafactor.lr=0.1"},
               "trainer.init.optimizer.Adafactor.relative_step: the step size comes from the step "
               "count");
  expect_error("optimizers.yaml", 4, {"trainer.init.optimizer.Adafactor.relative_step=false"},
               "trainer.init.optimizer.Adafactor.warmup_init: needs relative_step: true");
  expect_error("optimizers.yaml", 10, {"trainer.init.optimizer.Muon.ns_steps=0"},
               "trainer.init.optimizer.Muon.ns_steps: 0 must be >= 1");
  expect_error("optimizers.yaml", 14, {"trainer.init.optimizer.Rprop.step_sizes=[20, 10]"},
               "step_size_min: 20 must be <= step_size_max (10)");
}

TEST(VendorYaml, EvalFrequencyIsStepsOrAFraction) {
  const LoopConfig every = compat_config("loop.yaml", 0).loop;
  EXPECT_EQ(every.eval_interval(), 5);
  EXPECT_EQ(every.eval_steps, 2);
  EXPECT_EQ(every.grad_accum_steps, 2);
  EXPECT_EQ(compat_config("loop.yaml", 1).loop.eval_interval(), 3);   // ceil(0.25 * 10)
  EXPECT_EQ(compat_config("loop.yaml", 2).loop.eval_interval(), 0);   // null: none
  EXPECT_EQ(compat_config("loop.yaml", 3).loop.eval_interval(), 10);  // 1.0: at the end
  EXPECT_EQ(
      compat_config("loop.yaml", 3, {"trainer.init.loop.eval_frequency=1"}).loop.eval_interval(),
      1);  // the integer 1: every step
  EXPECT_EQ(
      compat_config("loop.yaml", 3, {"trainer.init.loop.eval_frequency=0"}).loop.eval_interval(),
      0);
  for (const char* bad : {"1.5", "-2", "often"}) {
    expect_error("loop.yaml", 3, {std::string("trainer.init.loop.eval_frequency=") + bad},
                 std::string("trainer.init.loop.eval_frequency: ") + bad +
                     " (expected a positive integer (steps) or a fraction in (0, 1]");
  }
}

}  // namespace
}  // namespace mantissa::train
