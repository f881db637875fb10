// The vendor's keys in whole runs: deprecation notes through the events, log_loss_scale in the
// metrics records, eval_frequency as a fraction or null, eval_all over every checkpoint, and
// parameter groups reaching the optimizer.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

std::size_t records_with(const std::vector<std::string>& lines, const std::string& fragment) {
  std::size_t n = 0;
  for (const std::string& l : lines) n += l.find(fragment) != std::string::npos ? 1 : 0;
  return n;
}

TEST(VendorRuns, DeprecatedKeysAreNotedThroughTheEvents) {
  TinyRun r("vendor_notes");
  Recorder rec;
  ::testing::internal::CaptureStderr();
  Trainer t(r.config("text", {"trainer.init.model.mixed_precision=true"}), {&rec, {}});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(rec.said(
      "trainer.init.model.mixed_precision is deprecated: use trainer.init.precision.enabled"));
}

TEST(VendorRuns, LogLossScaleDecidesTheMetricsField) {
  // float16 with dynamic scaling: logged by default (the vendor's: when dynamic); off when
  // log_loss_scale is false. 4 steps logged every 2: two training records.
  for (const bool log : {true, false}) {
    TinyRun r("vendor_log_scale");
    std::vector<std::string> set = {"trainer.init.precision.fp16_type=float16"};
    if (!log) set.push_back("trainer.init.precision.log_loss_scale=false");
    Trainer(r.config("text", set), {}).run(RunMode::train);
    const std::vector<std::string> lines = r.metrics();
    EXPECT_EQ(records_with(lines, "\"step\":"), 2u);
    EXPECT_EQ(records_with(lines, "\"loss_scale\":"), log ? 2u : 0u);
  }
}

TEST(VendorRuns, EvalFrequencyAsAFractionOrNull) {
  // 4 steps: 0.5 -> every ceil(2) steps (2 and the end, 4); 0.75 -> ceil(3): 3 and 4; null:
  // no validation while training, said once.
  const std::pair<const char*, std::vector<std::int64_t>> cases[] = {
      {"0.5", {2, 4}}, {"0.75", {3, 4}}, {"null", {}}};
  for (const auto& [frequency, want] : cases) {
    TinyRun r("vendor_eval_frequency");
    Recorder rec;
    Trainer(r.config("text", {std::string("trainer.init.loop.eval_frequency=") + frequency}),
            {&rec, {}})
        .run(RunMode::train_and_eval);
    EXPECT_EQ(rec.evaluations, want) << frequency;
    EXPECT_EQ(rec.said("eval_frequency is 0: no validation while training"), want.empty());
  }
}

TEST(VendorRuns, EvalAllValidatesEveryCheckpointOldestFirst) {
  TinyRun r("vendor_eval_all");
  const TrainerConfig c = r.config("text", {"trainer.init.checkpoint.steps=2"});
  Trainer(c, {}).run(RunMode::train);
  Recorder rec;
  const RunSummary all = Trainer(c, {&rec, {}}).run(RunMode::eval_all);
  ASSERT_EQ(all.evals.size(), 2u);
  EXPECT_EQ(all.evals[0].step, 2);
  EXPECT_EQ(all.evals[1].step, 4);
  EXPECT_NE(all.evals[0].checkpoint.find("ckpt-00000002.safetensors"), std::string::npos);
  EXPECT_NE(all.evals[1].checkpoint.find("ckpt-00000004.safetensors"), std::string::npos);
  EXPECT_EQ(rec.evaluations, (std::vector<std::int64_t>{2, 4}));
  // Each is that checkpoint's validation: the one eval of the same file agrees.
  const RunSummary one =
      Trainer(c, {}).run(RunMode::eval, ResumeFrom::checkpoint(all.evals[0].checkpoint));
  EXPECT_EQ(one.eval->loss, all.evals[0].result.loss);
  EXPECT_NE(all.evals[0].result.loss, all.evals[1].result.loss);
  TinyRun empty("vendor_eval_all_empty");
  try {
    Trainer(empty.config(), {}).run(RunMode::eval_all);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("eval_all: no checkpoint in"), std::string::npos);
  }
}

TEST(VendorRuns, EvalAllGoesPastAnUnusableCheckpoint) {
  // Checkpoints at steps 2 and 4; the older one truncated to 100 bytes: step 4 is evaluated
  // all the same (its loss the one eval of that file gives) and step 2 is listed with its
  // error. Both truncated: the first's error is thrown.
  TinyRun r("vendor_eval_all_unusable");
  const TrainerConfig c = r.config("text", {"trainer.init.checkpoint.steps=2"});
  Trainer(c, {}).run(RunMode::train);
  const std::filesystem::path run = r.dir / "run";
  const std::filesystem::path two = run / "ckpt-00000002.safetensors";
  const std::filesystem::path four = run / "ckpt-00000004.safetensors";
  std::filesystem::resize_file(two, 100);
  Recorder rec;
  const RunSummary all = Trainer(c, {&rec, {}}).run(RunMode::eval_all);
  ASSERT_EQ(all.evals.size(), 1u);
  EXPECT_EQ(all.evals[0].step, 4);
  ASSERT_EQ(all.unusable.size(), 1u);
  EXPECT_EQ(all.unusable[0].checkpoint, two.string());
  EXPECT_NE(all.unusable[0].error.find(two.string()), std::string::npos) << all.unusable[0].error;
  EXPECT_NE(all.unusable[0].error.find("truncated"), std::string::npos) << all.unusable[0].error;
  EXPECT_EQ(all.global_step, 4);
  EXPECT_TRUE(rec.said("not evaluated; eval_all goes on with the next checkpoint"));
  const RunSummary one = Trainer(c, {}).run(RunMode::eval, ResumeFrom::checkpoint(four.string()));
  EXPECT_EQ(all.evals[0].result.loss, one.eval->loss);
  std::filesystem::resize_file(four, 100);
  try {
    Trainer(c, {}).run(RunMode::eval_all);
    FAIL() << "no checkpoint could be evaluated, and no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(two.string() + ":", 0), 0u) << e.what();
  }
}

TEST(VendorRuns, ParameterGroupsReachTheOptimizer) {
  // The first parameter (wte.weight) in a group with adjust_learning_rate 0.5: the progress
  // records show group 0's learning rate, 0.5 * 1e-3.
  TinyRun r("vendor_groups");
  Recorder rec;
  Trainer(r.config("text", {"trainer.init.optimizer.AdamW.params=[{params: 'wte.*', tag: "
                            "embedding, adjust_learning_rate: 0.5, weight_decay: 0.0}]"}),
          {&rec, {}})
      .run(RunMode::train);
  ASSERT_FALSE(rec.progress_seen.empty());
  EXPECT_DOUBLE_EQ(rec.progress_seen.back().learning_rate, 0.5e-3);
}

}  // namespace
}  // namespace mantissa::train
