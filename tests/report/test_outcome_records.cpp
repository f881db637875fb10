// Issue 27's run outcomes in metrics.jsonl: the fall-back record, the end record, the
// interleaved throughput records and the same-bits levels, each against hand-written JSON,
// read back, and refused (naming file, line and key) when malformed; and what the reader
// keeps of them when a run record starts a run over.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"

namespace mantissa::report {
namespace {

const char* kRunLine =
    R"({"run":{"format":"float16","loss_scaling":"dynamic","model":"gpt","parameters":26016,)"
    R"("unit":"tokens","items_per_step":64,"start_step":0,"max_steps":8,"seed":2,)"
    R"("cpu":"Some CPU","settings":[]}})";

std::string error_of(const std::string& text) {
  try {
    parse_metrics(text, "r/metrics.jsonl");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

TEST(OutcomeRecords, AreTheDocumentedJson) {
  EXPECT_EQ(metrics_line(FallbackRecord{3, numerics::Format::float16, numerics::Format::bfloat16,
                                        "loss scale stuck"}),
            R"({"fallback_step":3,"from":"float16","reason":"loss scale stuck","to":"bfloat16"})");
  EXPECT_EQ(metrics_line(OutcomeRecord{2, RunOutcome::loss_scale_floor, 2, 2, "", "", "why"}),
            R"({"checkpoint":"","end":2,"last_skipped_step":2,"message":"why",)"
            R"("outcome":"loss_scale_floor","signal":"","skipped_steps":2})");
  // No skipped step: the field is left out.
  EXPECT_EQ(metrics_line(OutcomeRecord{5, RunOutcome::interrupted, 0, std::nullopt, "SIGTERM",
                                       "r/ckpt-5.safetensors", ""}),
            R"({"checkpoint":"r/ckpt-5.safetensors","end":5,"message":"","outcome":"interrupted",)"
            R"("signal":"SIGTERM","skipped_steps":0})");
  EXPECT_EQ(metrics_line(ThroughputRecord{"float16", "tokens", 1000.0, 800.0, 1250.0, 10}),
            R"({"fastest_items_per_s":1250.0,"interleaved_throughput":"float16",)"
            R"("items_per_s":1000.0,"slowest_items_per_s":800.0,"steps":10,"unit":"tokens"})");
  RunRecord r;
  r.same_bits_opt_levels = {0};
  EXPECT_NE(metrics_line(r).find(R"("same_bits_opt_levels":[0])"), std::string::npos);
  r.same_bits_opt_levels.clear();
  EXPECT_EQ(metrics_line(r).find("same_bits"), std::string::npos) << "left out when none";
  EXPECT_NE(metrics_line(RoutesRecord{1, {}, {0, 2}}).find(R"("same_bits_opt_levels":[0,2])"),
            std::string::npos);
  // One word per outcome, in the enum's order.
  EXPECT_EQ(names_of(kRunOutcomeNames),
            "completed, loss_scale_floor, nonfinite_steps, interrupted, error");
}

TEST(OutcomeRecords, ReadBackAndTellTheStory) {
  const std::string text =
      std::string(kRunLine) + "\n" +
      R"({"skipped_step":1,"loss_scale":32768.0,"overflowed":["w"]})"
      "\n"
      R"j({"fallback_step":1,"from":"float16","to":"bfloat16","reason":"loss scale stuck at its minimum 2^15 (on_stuck: fall_back)"})j"
      "\n"
      R"({"routes":1,"products":[],"same_bits_opt_levels":[0]})"
      "\n"
      R"({"end":8,"outcome":"completed","skipped_steps":1,"last_skipped_step":1,"signal":"","checkpoint":"r/ckpt-8.safetensors","message":""})"
      "\n";
  const RunLog log = parse_metrics(text, "m");
  ASSERT_EQ(log.fallbacks.size(), 1u);
  EXPECT_EQ(log.fallbacks[0].step, 1);
  EXPECT_EQ(log.fallbacks[0].from, numerics::Format::float16);
  EXPECT_EQ(log.fallbacks[0].to, numerics::Format::bfloat16);
  ASSERT_TRUE(log.outcome.has_value());
  EXPECT_EQ(log.outcome->outcome, RunOutcome::completed);
  EXPECT_EQ(log.outcome->last_skipped_step, 1);
  EXPECT_EQ(log.routes.back().same_bits_opt_levels, std::vector<int>{0});
  // The run record still says float16 (what it started in); the label tells the rest.
  EXPECT_EQ(log.run.format, numerics::Format::float16);
  EXPECT_EQ(format_label(log), "float16 \u2192 bfloat16");
  EXPECT_EQ(outcome_text(log), "completed 8 steps (1 skipped; last skipped step 1)");
  EXPECT_EQ(fallback_texts(log),
            std::vector<std::string>{"fell back from float16 to bfloat16 after step 1: loss "
                                     "scale stuck at its minimum 2^15 (on_stuck: fall_back)"});
}

TEST(OutcomeRecords, EveryOutcomeHasItsWords) {
  RunLog log = parse_metrics(std::string(kRunLine) + "\n", "m");
  EXPECT_EQ(outcome_text(log).rfind("no end recorded", 0), 0u) << outcome_text(log);
  log.outcome = OutcomeRecord{2,  RunOutcome::loss_scale_floor,           2, 2, "",
                              "", "loss scale stuck at its minimum 2^-14"};
  EXPECT_EQ(outcome_text(log),
            "stopped at the loss-scale floor at step 2 of 8 (2 skipped; last skipped step 2): "
            "loss scale stuck at its minimum 2^-14");
  log.outcome = OutcomeRecord{20, RunOutcome::nonfinite_steps, 20, 20, "", "", "20 steps"};
  EXPECT_EQ(outcome_text(log),
            "stopped for non-finite steps at step 20 of 8 (20 skipped; last skipped step 20): "
            "20 steps");
  log.outcome = OutcomeRecord{5, RunOutcome::interrupted, 0, std::nullopt, "SIGTERM", "c5", ""};
  EXPECT_EQ(outcome_text(log), "interrupted by SIGTERM at step 5 of 8 (checkpoint c5)");
  log.outcome = OutcomeRecord{3, RunOutcome::error, 0, std::nullopt, "", "", "disk full"};
  EXPECT_EQ(outcome_text(log), "failed at step 3 of 8: disk full");
}

TEST(OutcomeRecords, ARunRecordStartsTheStoryOver) {
  std::string resumed = kRunLine;
  resumed.replace(resumed.find("\"start_step\":0"), 14, "\"start_step\":4");
  const std::string text =
      std::string(kRunLine) + "\n" +
      R"({"fallback_step":2,"from":"float16","to":"bfloat16","reason":"r"})"
      "\n"
      R"({"fallback_step":6,"from":"float16","to":"bfloat16","reason":"r"})"
      "\n"
      R"({"end":6,"outcome":"interrupted","skipped_steps":0,"signal":"SIGINT","checkpoint":"c","message":""})"
      "\n" +
      resumed + "\n";
  const RunLog log = parse_metrics(text, "m");
  // The fall-back at step 2 led to the checkpoint the run resumed from; the one at 6 did not.
  ASSERT_EQ(log.fallbacks.size(), 1u);
  EXPECT_EQ(log.fallbacks[0].step, 2);
  EXPECT_FALSE(log.outcome.has_value()) << "the resumed run has not ended";
}

// A resume in other settings (`--resume-settings config`): the report tells what changed
// at which step, from the record of the part in force there, and labels the precisions in
// order; a later resume from an earlier checkpoint takes the story back.
TEST(OutcomeRecords, AResumeInOtherSettingsIsTold) {
  const auto record = [](const char* format, int start, const char* settings) {
    return std::string(R"({"run":{"format":")") + format +
           R"(","loss_scaling":"none","model":"gpt","parameters":26016,"unit":"tokens",)"
           R"("items_per_step":64,"start_step":)" +
           std::to_string(start) + R"(,"max_steps":8,"seed":2,"cpu":"c","settings":)" + settings +
           "}}\n";
  };
  const char* f32 = R"([["enabled","false"],["learning rate","0.001"]])";
  const char* bf16 = R"([["enabled","true"],["fp16_type","bfloat16"],["learning rate","0.01"]])";
  const std::string text = record("float32", 0, f32) + record("bfloat16", 4, bf16);
  const RunLog log = parse_metrics(text, "m");
  ASSERT_EQ(log.settings_changes.size(), 1u);
  EXPECT_EQ(log.settings_changes[0].step, 4);
  EXPECT_EQ(format_label(log), "float32 \u2192 bfloat16");
  EXPECT_EQ(start_precision(log), "float32");
  EXPECT_EQ(settings_change_texts(log),
            std::vector<std::string>{
                "resumed at step 4 in other settings: precision float32 \u2192 bfloat16, "
                "enabled false \u2192 true, learning rate 0.001 \u2192 0.01, fp16_type (none) "
                "\u2192 bfloat16"});
  // The same settings again: nothing to tell.
  EXPECT_TRUE(parse_metrics(record("float32", 0, f32) + record("float32", 4, f32), "m")
                  .settings_changes.empty());
  // Resumed from step 2, before the change, in float32 again: the bfloat16 part is gone and
  // the part in force at step 2 was float32's, so nothing changed.
  const RunLog back = parse_metrics(text + record("float32", 2, f32), "m");
  EXPECT_TRUE(back.settings_changes.empty());
  EXPECT_EQ(format_label(back), "float32");
  // A fresh run in the same directory tells nothing of the run before it.
  EXPECT_TRUE(parse_metrics(text + record("bfloat16", 0, bf16), "m").settings_changes.empty());
  // After a fall-back the resumed run continues in the format fallen back to: that is no
  // change, and the format's own rows are not compared (the learning rate still is).
  const RunLog fell = parse_metrics(
      record("float16", 0, R"([["fp16_type","float16"],["learning rate","0.001"]])") +
          R"({"fallback_step":2,"from":"float16","to":"bfloat16","reason":"r"})"
          "\n" +
          record("bfloat16", 4, R"([["fp16_type","bfloat16"],["learning rate","0.002"]])"),
      "m");
  ASSERT_EQ(fell.settings_changes.size(), 1u);
  EXPECT_EQ(settings_change_texts(fell),
            std::vector<std::string>{
                "resumed at step 4 in other settings: learning rate 0.001 \u2192 0.002"});
  EXPECT_EQ(format_label(fell), "float16 \u2192 bfloat16");
}

TEST(OutcomeRecords, MalformedRecordsAreNamed) {
  const std::string head = std::string(kRunLine) + "\n";
  EXPECT_EQ(error_of(head + R"({"end":2,"outcome":"crashed","skipped_steps":0,"signal":"",)"
                            R"("checkpoint":"","message":""})"),
            "r/metrics.jsonl:2: 'outcome' is 'crashed' (expected one of: completed, "
            "loss_scale_floor, nonfinite_steps, interrupted, error)");
  EXPECT_EQ(error_of(head + R"({"end":2,"outcome":"error","skipped_steps":0,"signal":"",)"
                            R"("checkpoint":""})"),
            "r/metrics.jsonl:2: the end record has no 'message' field");
  EXPECT_EQ(error_of(head + R"({"fallback_step":2,"from":"float16","to":"half","reason":""})"),
            "r/metrics.jsonl:2: 'to' is 'half', not a number format");
  EXPECT_EQ(error_of(head + R"({"fallback_step":2,"from":"float4_e2m1","to":"bfloat16",)"
                            R"("reason":""})"),
            "r/metrics.jsonl:2: 'from' is 'float4_e2m1', not a tensor format");
  std::string levels = kRunLine;
  levels.replace(levels.find("\"settings\""), 10, "\"same_bits_opt_levels\":[3],\"settings\"");
  EXPECT_EQ(error_of(levels),
            "r/metrics.jsonl:1: 'same_bits_opt_levels' is not a list of levels 0, 1, 2");
}

TEST(ThroughputRecords, ReadBackAndRefuseWhatIsNotAMeasurement) {
  const std::vector<ThroughputRecord> t = parse_throughput(
      R"({"interleaved_throughput":"bfloat16","unit":"tokens","items_per_s":1500.5,)"
      R"("slowest_items_per_s":1400.0,"fastest_items_per_s":1600.0,"steps":10})"
      "\n\n",
      "t.jsonl");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].run, "bfloat16");
  EXPECT_EQ(t[0].items_per_second, 1500.5);
  EXPECT_EQ(t[0].slowest, 1400.0);
  EXPECT_EQ(t[0].fastest, 1600.0);
  EXPECT_EQ(t[0].steps, 10);
  const auto error = [](const std::string& text) {
    try {
      parse_throughput(text, "t.jsonl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A training run's metrics are not an interleaved measurement.
  EXPECT_EQ(error(std::string(kRunLine)),
            "t.jsonl:1: not an interleaved_throughput record (the throughput.jsonl mantissa "
            "compare writes)");
  EXPECT_EQ(error(R"({"interleaved_throughput":"f","unit":"tokens","items_per_s":10,)"
                  R"("slowest_items_per_s":20,"fastest_items_per_s":30,"steps":1})"),
            "t.jsonl:1: not 0 < slowest <= items_per_s <= fastest with steps >= 1");
  EXPECT_EQ(error(R"({"interleaved_throughput":"f","unit":"tokens","items_per_s":null,)"
                  R"("slowest_items_per_s":1,"fastest_items_per_s":3,"steps":1})"),
            "t.jsonl:1: not 0 < slowest <= items_per_s <= fastest with steps >= 1");
  EXPECT_EQ(error(R"({"interleaved_throughput":"f"})"),
            "t.jsonl:1: the interleaved_throughput record has no 'unit' field");
}

}  // namespace
}  // namespace mantissa::report
