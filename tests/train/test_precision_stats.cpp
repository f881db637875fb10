// "Which layer loses what" and the overflow attribution in the trainer: sampled steps write
// precision_stats records that read back typed, fp8 runs record their casts' scales, a run
// without the key writes none, and a skipped step names where its backward went non-finite.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "mantissa/report/metrics.hpp"
#include "mantissa/train/trainer.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

using precision::QuantRole;

// Trains the tiny run with `overrides` and reads its metrics back.
report::RunLog train_and_read(const TinyRun& run, const std::vector<std::string>& overrides,
                              Recorder* events = nullptr) {
  Trainer(run.config("text", overrides), {events, {}}).run(RunMode::train);
  return report::read_run_log((run.dir / "run").string());
}

const report::PrecisionSite* site(const report::PrecisionStatsRecord& r, const std::string& layer,
                                  const std::string& op, QuantRole role) {
  for (const report::PrecisionSite& s : r.sites) {
    if (s.layer == layer && s.op == op && s.role == role) return &s;
  }
  return nullptr;
}

TEST(PrecisionStats, SampledStepsWriteTypedRecords) {
  TinyRun run("precision_stats");
  const report::RunLog log = train_and_read(run, {"trainer.init.precision.fp16_type=float16",
                                                  "trainer.init.logging.precision_stats_steps=2"});
  std::vector<std::int64_t> steps;
  for (const auto& r : log.precision_stats) steps.push_back(r.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 4}));  // step 1 and every 2nd
  for (const report::PrecisionStatsRecord& r : log.precision_stats) {
    // qkv's weight [48, 16], rounded once per step; its forward result [2 x 16, 48].
    const report::PrecisionSite* w = site(r, "blocks.0.attn.qkv", "linear", QuantRole::weight);
    ASSERT_NE(w, nullptr) << "step " << r.step;
    EXPECT_EQ(w->format, numerics::Format::float16);
    EXPECT_EQ(w->counts.elements, 48 * 16);
    ASSERT_TRUE(w->snr_db.has_value());
    EXPECT_GT(*w->snr_db, 60.0);  // float16 keeps 11 bits: about 74 dB on such weights
    const report::PrecisionSite* y = site(r, "blocks.0.attn.qkv", "linear", QuantRole::output);
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->counts.elements, 2 * 16 * 48);
    EXPECT_FALSE(y->scale.has_value());  // no scale in a half format
    // The backward's roundings carry their forward's layer.
    EXPECT_NE(site(r, "blocks.0.fc", "linear", QuantRole::input_grad), nullptr);
    std::set<std::string> layers;
    for (const report::PrecisionSite& s : r.sites) layers.insert(s.layer);
    for (const char* l : {"blocks.0.attn.qkv", "blocks.0.attn.proj", "blocks.0.attn", "blocks.0.fc",
                          "blocks.0.out", "head"}) {
      EXPECT_TRUE(layers.count(l)) << l;
    }
  }
}

TEST(PrecisionStats, Fp8RunsRecordTheirCastsAndScales) {
  TinyRun run("precision_stats_fp8");
  const report::RunLog log =
      train_and_read(run, {"trainer.init.precision.fp8={enabled: true, history_length: 2}",
                           "trainer.init.logging.precision_stats_steps=4"});
  ASSERT_EQ(log.precision_stats.size(), 2u);  // steps 1 and 4
  const report::PrecisionStatsRecord& first = log.precision_stats[0];
  const report::PrecisionSite* x = site(first, "blocks.0.fc", "linear_fp8", QuantRole::input);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->format, numerics::Format::float8_e4m3);
  ASSERT_TRUE(x->scale.has_value());
  EXPECT_EQ(x->scale->min, 1.0);  // delayed scaling starts at 1
  const report::PrecisionSite* g = site(first, "blocks.0.fc", "linear_fp8", QuantRole::grad);
  ASSERT_NE(g, nullptr);
  bool e5m2 = false;
  for (const report::PrecisionSite& s : first.sites)
    e5m2 |= s.layer == "blocks.0.fc" && s.role == QuantRole::grad &&
            s.format == numerics::Format::float8_e5m2;
  EXPECT_TRUE(e5m2);  // hybrid: gradients in e5m2
  // By step 4 the scales follow the amax history: no longer 1.
  const report::PrecisionSite* later =
      site(log.precision_stats[1], "blocks.0.fc", "linear_fp8", QuantRole::input);
  ASSERT_NE(later, nullptr);
  EXPECT_NE(later->scale->min, 1.0);
}

TEST(PrecisionStats, OffByDefault) {
  TinyRun run("sampling_off");
  Trainer(run.config()).run(RunMode::train);
  for (const std::string& line : run.metrics()) {
    EXPECT_FALSE(nlohmann::json::parse(line).contains("precision_stats")) << line;
  }
  EXPECT_TRUE(report::read_run_log((run.dir / "run").string()).precision_stats.empty());
}

TEST(OverflowAttribution, ASkippedStepNamesWhereItsBackwardWentNonFinite) {
  // A loss scale of 2^20 in float16: the scaled loss's gradient is past 65504 before it
  // reaches any layer. Every step skips until the scale has halved to 2^15.
  TinyRun run("overflow_origin");
  Recorder rec;
  const report::RunLog log = train_and_read(
      run,
      {"trainer.init.precision.fp16_type=float16",
       "trainer.init.precision.initial_loss_scale=1048576",
       "trainer.init.precision.max_loss_scale=1048576", "trainer.init.loop.max_steps=6"},
      &rec);
  ASSERT_EQ(log.skips.size(), 5u);  // 2^20 down to 2^16 (65536 > 65504)
  for (const report::SkipRecord& s : log.skips) {
    ASSERT_TRUE(s.first_nonfinite.has_value()) << "step " << s.step;
    EXPECT_EQ(s.first_nonfinite->op, "scale");
    EXPECT_EQ(s.first_nonfinite->layer, "");
    EXPECT_EQ(s.first_nonfinite->gradient, autograd::NonfiniteGradient::input_grad);
    EXPECT_FALSE(s.overflowed.empty());  // the parameters it reached, still recorded
  }
  EXPECT_TRUE(
      rec.said("skipped step 1: non-finite gradients at loss scale 2^20, first in the "
               "backward of scale at the model's top level (reached "))
      << (rec.messages.empty() ? "" : rec.messages.front());
}

TEST(OverflowAttribution, CanBeTurnedOff) {
  TinyRun run("overflow_origin_off");
  Recorder rec;
  const report::RunLog log = train_and_read(
      run,
      {"trainer.init.precision.fp16_type=float16",
       "trainer.init.precision.initial_loss_scale=1048576",
       "trainer.init.precision.max_loss_scale=1048576",
       "trainer.init.logging.attribute_overflows=false", "trainer.init.loop.max_steps=1"},
      &rec);
  ASSERT_EQ(log.skips.size(), 1u);
  EXPECT_FALSE(log.skips[0].first_nonfinite.has_value());
  EXPECT_FALSE(log.skips[0].overflowed.empty());
  // The parameters, as before the attribution existed.
  EXPECT_TRUE(rec.said("skipped step 1: non-finite gradients at loss scale 2^20 in wte.weight, "));
}

}  // namespace
}  // namespace mantissa::train
