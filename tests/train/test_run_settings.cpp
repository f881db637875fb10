// The mixed-precision settings a run records (its run record's "settings", the report's
// settings table): from a config's precision block to rows named by its keys, against rows
// written out by hand; and whole tiny runs: a run without a loss scaler (or with
// log_loss_scale off) writes step records without "loss_scale", a float16 run with one; the
// progress events carry a scale exactly when a scaler runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mantissa/report/metrics.hpp"
#include "run_settings.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

using report::SettingRow;

using Rows = std::vector<SettingRow>;

// The tiny job's precision block with `overrides` (as --set) and the rows it records; the
// matmul_route row (it names this CPU's instruction set) is moved to `route`.
Rows rows_of(const std::vector<std::string>& overrides, std::string& route) {
  TinyRun run("settings");
  std::vector<std::string> sets;
  for (const std::string& o : overrides) sets.push_back("trainer.init.precision." + o);
  const TrainerConfig c = run.config("text", sets);
  const std::unique_ptr<amp::GradScaler> scaler = c.precision.make_scaler();
  Rows rows = detail::precision_settings(c.precision, c.precision.policy(), scaler.get());
  for (auto it = rows.begin(); it != rows.end(); ++it) {
    if (it->first == "matmul_route") {
      route = it->second;
      rows.erase(it);
      break;
    }
  }
  return rows;
}

TEST(RunSettings, ADynamicScalerRecordsEveryOption) {
  std::string route;
  const Rows rows =
      rows_of({"fp16_type=float16", "initial_loss_scale=1048576", "max_loss_scale=65536",
               "min_loss_scale=0.0625", "steps_per_increase=50", "growth_factor=4",
               "backoff_factor=0.25", "overflow_tolerance=0.05", "hysteresis=3",
               "consecutive_hysteresis=true", "on_stuck=keep_going", "log_loss_scale=false",
               "max_gradient_value=0.5", "precision_opt_level=2", "matmul_route=fp32"},
              route);
  const Rows expected = {
      {"enabled", "true"},
      {"fp16_type", "float16"},
      {"precision_opt_level", "2"},
      {"loss_scaling_factor", "dynamic"},
      {"initial_loss_scale", "2^20, above max_loss_scale: starts at 2^16"},
      {"min_loss_scale", "2^-4"},
      {"max_loss_scale", "2^16"},
      {"steps_per_increase", "50"},
      {"growth_factor", "4"},
      {"backoff_factor", "0.25"},
      {"overflow_tolerance", "0.05"},
      {"hysteresis", "3"},
      {"consecutive_hysteresis", "true"},
      {"on_stuck", "keep_going"},
      {"log_loss_scale", "false"},
      {"max_gradient_norm", "unset"},
      {"max_gradient_value", "0.5"},
  };
  EXPECT_EQ(rows, expected);
  // The route asked for: mantissa's fp32 FMA GEMM, POL 2 rounding float16 to bfloat16.
  EXPECT_EQ(route.rfind("fp32 (mantissa GEMM, fp32 FMA, ", 0), 0u) << route;
  EXPECT_NE(route.find("); inputs rounded to bfloat16 (POL 2)"), std::string::npos) << route;
}

TEST(RunSettings, DefaultsAreFilledInPerFormat) {
  std::string route;
  // cbfloat16's scale defaults are 2^31 (docs/design.md section 4); the rest are the documented
  // defaults (docs/mixed_precision.md).
  const Rows rows = rows_of({"fp16_type=cbfloat16", "max_gradient_norm=1.0"}, route);
  const Rows expected = {
      {"enabled", "true"},
      {"fp16_type", "cbfloat16"},
      {"precision_opt_level", "1"},
      {"loss_scaling_factor", "dynamic"},
      {"initial_loss_scale", "2^31"},
      {"min_loss_scale", "2^-14"},
      {"max_loss_scale", "2^31"},
      {"steps_per_increase", "2000"},
      {"growth_factor", "2"},
      {"backoff_factor", "0.5"},
      {"overflow_tolerance", "0"},
      {"hysteresis", "1 (off)"},
      {"consecutive_hysteresis", "false"},
      {"on_stuck", "raise"},
      {"log_loss_scale", "true"},
      {"max_gradient_norm", "1"},
      {"max_gradient_value", "unset"},
  };
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(route.rfind("automatic (the fastest of ", 0), 0u) << route;
}

TEST(RunSettings, WithoutADynamicScalerOnlyTheFactorIsRecorded) {
  std::string route;
  // The tiny job is bfloat16 with loss_scaling_factor: dynamic: no scaler.
  EXPECT_EQ(rows_of({}, route), (Rows{{"enabled", "true"},
                                      {"fp16_type", "bfloat16"},
                                      {"precision_opt_level", "1"},
                                      {"loss_scaling_factor",
                                       "dynamic, ignored: bfloat16 has float32's range (no "
                                       "scaler)"},
                                      {"max_gradient_norm", "unset"},
                                      {"max_gradient_value", "unset"}}));
  EXPECT_EQ(rows_of({"enabled=false"}, route),
            (Rows{{"enabled", "false: float32 throughout"},
                  {"loss_scaling_factor", "dynamic, ignored: mixed precision is off (no scaler)"},
                  {"max_gradient_norm", "unset"},
                  {"max_gradient_value", "unset"}}));
  // float32 values choose among the fp32 routes only.
  EXPECT_EQ(route.rfind("automatic (the fastest of fp32, onednn_fp32, measured", 0), 0u) << route;
  EXPECT_EQ(route.find("bf16"), std::string::npos) << "float32 has no bf16 routes: " << route;
  // Static scaling: the scale, and log_loss_scale's default for it (off).
  EXPECT_EQ(rows_of({"fp16_type=float16", "loss_scaling_factor=1024"}, route),
            (Rows{{"enabled", "true"},
                  {"fp16_type", "float16"},
                  {"precision_opt_level", "1"},
                  {"loss_scaling_factor", "2^10 (static)"},
                  {"log_loss_scale", "false"},
                  {"max_gradient_norm", "unset"},
                  {"max_gradient_value", "unset"}}));
}

// The step records ("step" lines) of a tiny run with `overrides`, and its run record.
struct Records {
  std::vector<nlohmann::json> steps;
  nlohmann::json run;
  std::vector<Progress> progress;  // the trainer's progress events
};
Records records_of(const std::vector<std::string>& overrides) {
  TinyRun run("loss_scale_field");
  std::vector<std::string> sets;
  for (const std::string& o : overrides) sets.push_back("trainer.init.precision." + o);
  Recorder events;
  Trainer(run.config("text", sets), {&events, {}}).run(RunMode::train);
  Records r;
  r.progress = events.progress_seen;
  for (const std::string& line : run.metrics()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("run")) r.run = j["run"];
    if (j.contains("step")) r.steps.push_back(j);
  }
  return r;
}

TEST(RunSettings, StepRecordsCarryALossScaleOnlyWhenOneIsLogged) {
  // bfloat16 (the scaling setting ignored): no scaler, no loss_scale field.
  const Records bf16 = records_of({});
  EXPECT_EQ(bf16.run["loss_scaling"], "none");
  ASSERT_EQ(bf16.steps.size(), 2u);  // 4 steps logged every 2
  for (const nlohmann::json& s : bf16.steps) EXPECT_FALSE(s.contains("loss_scale")) << s;
  ASSERT_EQ(bf16.progress.size(), 2u);
  for (const Progress& p : bf16.progress) EXPECT_FALSE(p.loss_scale.has_value()) << p.step;
  // float16 with dynamic scaling: the scale each window's last step used. A window of 2
  // steps cannot reach steps_per_increase (2000), and a one-layer GPT's gradients times 2^15
  // stay far below 65504, so the scale is the initial one.
  const Records f16 = records_of({"fp16_type=float16"});
  EXPECT_EQ(f16.run["loss_scaling"], "dynamic");
  ASSERT_EQ(f16.steps.size(), 2u);
  for (const nlohmann::json& s : f16.steps) {
    EXPECT_EQ(s["skipped_steps"], 0) << s;
    EXPECT_EQ(s["loss_scale"], 32768.0) << s;
  }
  for (const Progress& p : f16.progress) EXPECT_EQ(p.loss_scale, 32768.0) << p.step;
  // The same with log_loss_scale off: the scaler runs, the field is left out, the run says so.
  const Records quiet = records_of({"fp16_type=float16", "log_loss_scale=false"});
  EXPECT_EQ(quiet.run["loss_scaling"], "dynamic");
  for (const nlohmann::json& s : quiet.steps) EXPECT_FALSE(s.contains("loss_scale")) << s;
  for (const Progress& p : quiet.progress) EXPECT_EQ(p.loss_scale, 32768.0) << "still shown";
  bool recorded = false;
  for (const nlohmann::json& row : quiet.run["settings"]) {
    recorded = recorded || row == nlohmann::json::array({"log_loss_scale", "false"});
  }
  EXPECT_TRUE(recorded) << quiet.run["settings"];
}

}  // namespace
}  // namespace mantissa::train
