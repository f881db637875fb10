// Issue 27: every run says how it ended. A float16 run whose loss scale hits its floor falls
// back (on_stuck: fall_back: recorded as typed data, labelled by the format it continued in)
// or stops (raise: its last skipped step recorded, and why); a run that completes, one a
// signal interrupts and one that fails each leave an end record. And POL 0 and POL 1 compute
// the same bits for float16 on the fp32 route: the run says so, and the bits agree.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

using report::RunOutcome;

// A float16 run whose scaled gradients overflow float16 from the first step: the scale
// starts at 2^41 with its floor at 2^40 (every gradient of a loss near 4 times 2^40 is far
// beyond float16's 65504), so step 1 halves it to the floor and step 2 reaches it.
std::vector<std::string> stuck(const char* on_stuck) {
  return {
      "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, "
      "initial_loss_scale: 2199023255552, min_loss_scale: 1099511627776, max_loss_scale: "
      "2199023255552, on_stuck: " +
      std::string(on_stuck) + "}"};
}

report::RunLog run_log(const TinyRun& r) {
  return report::read_run_log((r.dir / "run").string());
}

TEST(RunOutcomes, AFallBackIsRecordedAndTheRunGoesOnInBfloat16) {
  TinyRun r("fallback");
  Recorder rec;
  Trainer(r.config("text", stuck("fall_back")), {&rec, {}}).run(RunMode::train);
  const report::RunLog log = run_log(r);
  EXPECT_EQ(log.run.format, numerics::Format::float16) << "what the run started in";
  ASSERT_EQ(log.fallbacks.size(), 1u);
  EXPECT_EQ(log.fallbacks[0].step, 2);
  EXPECT_EQ(log.fallbacks[0].from, numerics::Format::float16);
  EXPECT_EQ(log.fallbacks[0].to, numerics::Format::bfloat16);
  EXPECT_EQ(log.fallbacks[0].reason, "loss scale stuck at its minimum 2^40 (on_stuck: fall_back)");
  EXPECT_EQ(report::format_label(log), "float16 \u2192 bfloat16");
  ASSERT_EQ(log.skips.size(), 2u);  // steps 1 and 2 overflowed; 3 and 4 ran in bfloat16
  EXPECT_EQ(log.skips[1].step, 2);
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::completed);
  EXPECT_EQ(log.outcome->step, 4);
  EXPECT_EQ(log.outcome->skipped_steps, 2);
  EXPECT_EQ(log.outcome->last_skipped_step, 2);
  EXPECT_TRUE(rec.said("precision falls back to bfloat16 from step 3 on"));
}

TEST(RunOutcomes, AStopAtTheLossScaleFloorRecordsItsLastSkippedStepAndWhy) {
  TinyRun r("floor");
  Recorder rec;
  try {
    Trainer(r.config("text", stuck("raise")), {&rec, {}}).run(RunMode::train);
    FAIL() << "expected the stuck-at-minimum error";
  } catch (const amp::StepGuardError& e) {
    EXPECT_EQ(e.why(), amp::GuardStop::loss_scale_floor);
    EXPECT_EQ(e.loss_scale(), 1099511627776.0) << "the scale the last step used: 2^40";
    EXPECT_NE(std::string(e.what()).find("loss scale stuck at its minimum 2^40"), std::string::npos)
        << e.what();
  }
  const report::RunLog log = run_log(r);
  ASSERT_EQ(log.skips.size(), 2u);
  EXPECT_EQ(log.skips[1].step, 2) << "the step that stopped the run is recorded";
  EXPECT_EQ(log.skips[1].loss_scale, 1099511627776.0);
  EXPECT_FALSE(log.skips[1].overflowed.empty());
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::loss_scale_floor);
  EXPECT_EQ(log.outcome->step, 2);
  EXPECT_EQ(log.outcome->skipped_steps, 2);
  EXPECT_EQ(log.outcome->last_skipped_step, 2);
  EXPECT_NE(log.outcome->message.find("loss scale stuck at its minimum 2^40: gradients "
                                      "keep overflowing (set precision.on_stuck"),
            std::string::npos)
      << log.outcome->message;
  EXPECT_EQ(report::outcome_text(log).rfind("stopped at the loss-scale floor at step 2 of 4 (2 "
                                            "skipped; last skipped step 2): loss scale stuck",
                                            0),
            0u)
      << report::outcome_text(log);
  // The stopping step's line and record name where its backward went non-finite, as every
  // skipped step's do: the scaling op (2^40 is past float16's 65504).
  EXPECT_TRUE(
      rec.said("skipped step 2: non-finite gradients at loss scale 2^40, first in the "
               "backward of scale at the model's top level (reached "));
  ASSERT_TRUE(log.skips[1].first_nonfinite.has_value());
  EXPECT_EQ(log.skips[1].first_nonfinite->op, "scale");
}

TEST(RunOutcomes, CompletedInterruptedAndFailedRunsEachSaySo) {
  TinyRun r("ends");
  Trainer(r.config(), {}).run(RunMode::train);
  report::RunLog log = run_log(r);
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::completed);
  EXPECT_EQ(log.outcome->step, 4);
  EXPECT_FALSE(log.outcome->last_skipped_step.has_value());
  EXPECT_EQ(log.outcome->checkpoint, (r.dir / "run" / "ckpt-00000004.safetensors").string());

  // A stop asked for by a signal handler: the run checkpoints and records the signal.
  TinyRun s("interrupted");
  std::atomic<bool> stop{true};
  std::atomic<int> signo{SIGTERM};
  const RunSummary summary =
      Trainer(s.config(), {nullptr, {}, {}, &stop, &signo}).run(RunMode::train);
  EXPECT_TRUE(summary.interrupted);
  EXPECT_EQ(summary.stop_signal, SIGTERM);
  log = run_log(s);
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::interrupted);
  EXPECT_EQ(log.outcome->signal, "SIGTERM");
  EXPECT_EQ(log.outcome->step, 0);
  EXPECT_EQ(report::outcome_text(log), "interrupted by SIGTERM at step 0 of 4 (checkpoint " +
                                           (s.dir / "run" / "ckpt-00000000.safetensors").string() +
                                           ")");

  // An update that makes the weights non-finite (a learning rate of 1e39) on every step.
  TinyRun f("failed");
  EXPECT_THROW(Trainer(f.config("text", {"trainer.init.optimizer={AdamW: {learning_rate: 1e39}}",
                                         "trainer.init.precision={enabled: false}"}),
                       {})
                   .run(RunMode::train),
               amp::StepGuardError);
  log = run_log(f);
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::nonfinite_steps);
  EXPECT_EQ(log.outcome->step, 4);
  EXPECT_EQ(log.outcome->last_skipped_step, 4);
  EXPECT_EQ(log.skips.size(), 4u) << "every step recorded, the last one too";
  EXPECT_NE(log.outcome->message.find("no step of this run was applied"), std::string::npos)
      << log.outcome->message;
}

// The bits of 3 steps of the tiny GPT (it has attention) in float16 on the fp32 route, at
// POL 0 and POL 1: the same, parameter by parameter and bit by bit, and the run says so in
// its log and its run record. cbfloat16 at POL 1 takes its attention softmax in H: not the
// same, and not said.
TEST(SameBits, Pol0AndPol1AgreeForFloat16OnTheFp32Route) {
  const auto train = [](const std::string& half, int pol, Recorder& rec, report::RunLog& log) {
    TinyRun r("pol" + std::to_string(pol) + half);
    Trainer t(r.config("text", {"trainer.init.loop.max_steps=3",
                                "trainer.init.precision={fp16_type: " + half +
                                    ", loss_scaling_factor: dynamic, matmul_route: fp32, "
                                    "precision_opt_level: " +
                                    std::to_string(pol) + "}"}),
              {&rec, {}});
    t.run(RunMode::train);
    log = run_log(r);
    return t.state_tensors();
  };
  Recorder rec0, rec1, rec_cb;
  report::RunLog log0, log1, log_cb;
  const auto pol0 = train("float16", 0, rec0, log0);
  const auto pol1 = train("float16", 1, rec1, log1);
  ASSERT_EQ(pol0.size(), pol1.size());
  int compared = 0;
  for (const auto& [name, t0] : pol0) {
    if (name.rfind("model.", 0) != 0) continue;
    const tensor::Tensor& t1 = pol1.at(name);
    const std::size_t bytes = static_cast<std::size_t>(t0.numel() * t0.element_bytes());
    ASSERT_EQ(bytes, static_cast<std::size_t>(t1.numel() * t1.element_bytes())) << name;
    EXPECT_EQ(std::memcmp(t0.raw_data(), t1.raw_data(), bytes), 0) << name;
    ++compared;
  }
  EXPECT_GT(compared, 5);
  EXPECT_TRUE(
      rec1.said("precision_opt_level 1 computes the same bits as precision_opt_level 0 "
                "on these routes: float16 products on fp32 routes are exact in one pass "
                "at POL 0 and 1"));
  EXPECT_TRUE(rec0.said("precision_opt_level 0 computes the same bits as precision_opt_level 1"));
  EXPECT_EQ(log1.run.same_bits_opt_levels, std::vector<int>{0});
  EXPECT_EQ(log0.run.same_bits_opt_levels, std::vector<int>{1});
  train("cbfloat16", 1, rec_cb, log_cb);
  EXPECT_FALSE(rec_cb.said("computes the same bits"));
  EXPECT_TRUE(log_cb.run.same_bits_opt_levels.empty());
}

}  // namespace
}  // namespace mantissa::train
