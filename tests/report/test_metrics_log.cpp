// metrics.jsonl: the lines a run writes (against hand-written JSON), the reader on
// hand-written files (values, resumption, torn lines and missing fields named by file and
// line), and a float16 run that overflows: each skipped step is named by its own step number
// in the log and recorded with the overflowing parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::report {
namespace {

namespace fs = std::filesystem;
using config::parse_config;
using config::TrainerConfig;
using precision::Fp8WindowCounts;
using train::RunMode;
using train::Trainer;
using train::TrainerEvents;

const char* kRunLine =
    R"({"run":{"format":"float16","loss_scaling":"dynamic","model":"gpt","parameters":26016,)"
    R"("unit":"tokens","items_per_step":64,"start_step":0,"max_steps":30,"seed":2,)"
    R"("cpu":"Some CPU","settings":[["loss_scaling_factor","dynamic"],["initial_loss_scale","2^15"]]}})";

std::string expect_error(const std::string& text) {
  try {
    parse_metrics(text, "runs/x/metrics.jsonl");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

TEST(MetricsLines, AreTheDocumentedJson) {
  EXPECT_EQ(metrics_line(SkipRecord{5, 1024.0, {"wte.weight", "head.weight"}, std::nullopt}),
            R"({"loss_scale":1024.0,"overflowed":["wte.weight","head.weight"],"skipped_step":5})");
  EXPECT_EQ(metrics_line(SkipRecord{
                6, 2.0, {"wte.weight"}, autograd::NonfiniteOrigin{"linear", "blocks.3.fc"}}),
            R"({"first_nonfinite":{"gradient":"input_grad","layer":"blocks.3.fc","op":"linear"},)"
            R"("loss_scale":2.0,"overflowed":["wte.weight"],"skipped_step":6})");
  EXPECT_EQ(metrics_line(WindowRecord{10, 2.5, 0.001, 32768.0, 1, 0.75, 1500.0, 96.5, std::nullopt},
                         "tokens"),
            R"({"grad_norm":0.75,"loss":2.5,"loss_scale":32768.0,"lr":0.001,)"
            R"("peak_rss_mib":96.5,"skipped_steps":1,"step":10,"tokens_per_s":1500.0})");
  // A non-finite gradient norm is written as null.
  EXPECT_EQ(
      metrics_line(WindowRecord{2, 5.0, 0.5, 8.0, 2, INFINITY, 10.0, std::nullopt, std::nullopt},
                   "samples"),
      R"({"grad_norm":null,"loss":5.0,"loss_scale":8.0,"lr":0.5,"samples_per_s":10.0,)"
      R"("skipped_steps":2,"step":2})");
  // Without a logged loss scale (no scaler, or log_loss_scale off) the field is left out.
  EXPECT_EQ(
      metrics_line(WindowRecord{3, 1.0, 0.1, std::nullopt, 0, 1.0, 5.0, std::nullopt, std::nullopt},
                   "tokens"),
      R"({"grad_norm":1.0,"loss":1.0,"lr":0.1,"skipped_steps":0,"step":3,"tokens_per_s":5.0})");
  // fp8 linear layers: the window's totals and the tensors that had any.
  EXPECT_EQ(
      metrics_line(WindowRecord{4, 1.0, 0.1, std::nullopt, 0, 1.0, 5.0, std::nullopt,
                                Fp8WindowCounts{3, 7, {{"fc.grad", 3, 5}, {"fc.input", 0, 2}}}},
                   "tokens"),
      R"({"fp8_overflows":3,"fp8_tensors":{"fc.grad":{"overflows":3,"underflows":5},)"
      R"("fc.input":{"overflows":0,"underflows":2}},"fp8_underflows":7,"grad_norm":1.0,)"
      R"("loss":1.0,"lr":0.1,"skipped_steps":0,"step":4,"tokens_per_s":5.0})");
  EXPECT_EQ(metrics_line(EvalRecord{30, 1.5, 4.5, std::nullopt, 10}),
            R"({"eval_step":30,"loss":1.5,"perplexity":4.5,"steps":10})");
  RunRecord r;
  r.format = numerics::Format::cbfloat16;
  r.loss_scaling = LossScalingMode::fixed;
  r.model = "mlp";
  r.parameters = 7;
  r.unit = "samples";
  r.items_per_step = 32;
  r.start_step = 4;
  r.max_steps = 9;
  r.seed = 3;
  r.cpu = "c";
  r.settings = {{"a", "b"}};
  EXPECT_EQ(metrics_line(r),
            R"({"run":{"cpu":"c","format":"cbfloat16","items_per_step":32,"loss_scaling":"static",)"
            R"("max_steps":9,"model":"mlp","parameters":7,"seed":3,"settings":[["a","b"]],)"
            R"("start_step":4,"unit":"samples"}})");
}

TEST(MetricsLines, LossScalingModesHaveOneWordEach) {
  EXPECT_EQ(name_of(kLossScalingModeNames, LossScalingMode::none), "none");
  EXPECT_EQ(name_of(kLossScalingModeNames, LossScalingMode::fixed), "static");
  EXPECT_EQ(name_of(kLossScalingModeNames, LossScalingMode::dynamic), "dynamic");
  EXPECT_EQ(find_named(kLossScalingModeNames, "static"), LossScalingMode::fixed);
}

TEST(MetricsReader, ReadsEveryKindOfRecord) {
  const std::string text =
      std::string(kRunLine) + "\n" +
      R"({"skipped_step":1,"loss_scale":32768.0,"overflowed":["a.w","b.w"]})"
      "\n"
      R"({"step":10,"loss":5.25,"lr":0.002,"loss_scale":16384.0,)"
      R"("skipped_steps":1,"grad_norm":null,"tokens_per_s":1234.5,"peak_rss_mib":80.0})"
      "\n\n"
      R"({"eval_step":10,"loss":4.5,"perplexity":90.0,"steps":2})"
      "\n";
  const RunLog log = parse_metrics(text, "m.jsonl");
  EXPECT_EQ(log.source, "m.jsonl");
  EXPECT_EQ(log.run.format, numerics::Format::float16);
  EXPECT_EQ(log.run.loss_scaling, LossScalingMode::dynamic);
  EXPECT_EQ(log.run.model, "gpt");
  EXPECT_EQ(log.run.parameters, 26016);
  EXPECT_EQ(log.run.items_per_step, 64);
  EXPECT_EQ(log.run.max_steps, 30);
  EXPECT_EQ(log.run.seed, 2u);
  EXPECT_EQ(log.run.cpu, "Some CPU");
  ASSERT_EQ(log.run.settings.size(), 2u);
  EXPECT_EQ(log.run.settings[1], (SettingRow{"initial_loss_scale", "2^15"}));
  ASSERT_EQ(log.skips.size(), 1u);
  EXPECT_EQ(log.skips[0].step, 1);
  EXPECT_EQ(log.skips[0].loss_scale, 32768.0);
  EXPECT_EQ(log.skips[0].overflowed, (std::vector<std::string>{"a.w", "b.w"}));
  ASSERT_EQ(log.windows.size(), 1u);
  const WindowRecord& w = log.windows[0];
  EXPECT_EQ(w.step, 10);
  EXPECT_EQ(w.loss, 5.25);
  EXPECT_EQ(w.learning_rate, 0.002);
  EXPECT_EQ(w.loss_scale, 16384.0);
  EXPECT_EQ(w.skipped_steps, 1);
  EXPECT_TRUE(std::isnan(w.grad_norm)) << "null reads as not finite";
  EXPECT_EQ(w.items_per_second, 1234.5);
  EXPECT_EQ(w.peak_rss_mib, 80.0);
  ASSERT_EQ(log.evals.size(), 1u);
  EXPECT_EQ(log.evals[0].step, 10);
  EXPECT_EQ(log.evals[0].loss, 4.5);
  EXPECT_EQ(log.evals[0].perplexity, 90.0);
  EXPECT_FALSE(log.evals[0].accuracy.has_value());
  EXPECT_EQ(log.evals[0].batches, 2);
}

// An fp8 run: the run record's fp8 flag and the windows' fp8 counts read back.
TEST(MetricsReader, ReadsFp8RunsAndTheirCounts) {
  std::string fp8 = kRunLine;
  fp8.replace(fp8.find("\"float16\""), 9, "\"bfloat16\",\"fp8\":true");
  const RunLog log = parse_metrics(
      fp8 + "\n" +
          R"({"step":2,"loss":5.0,"lr":0.1,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":9.0,)"
          R"("fp8_overflows":1,"fp8_underflows":4,"fp8_tensors":{"h.grad":{"overflows":1,)"
          R"("underflows":4}}})"
          "\n",
      "m");
  EXPECT_TRUE(log.run.fp8);
  EXPECT_EQ(log.run.format, numerics::Format::bfloat16);
  ASSERT_EQ(log.windows.size(), 1u);
  ASSERT_TRUE(log.windows[0].fp8.has_value());
  EXPECT_EQ(log.windows[0].fp8->overflows, 1);
  EXPECT_EQ(log.windows[0].fp8->underflows, 4);
  ASSERT_EQ(log.windows[0].fp8->tensors.size(), 1u);
  EXPECT_EQ(log.windows[0].fp8->tensors[0].tensor, "h.grad");
  EXPECT_EQ(log.windows[0].fp8->tensors[0].underflows, 4);
  EXPECT_NE(expect_error(fp8 + "\n" +
                         R"({"step":2,"loss":5.0,"lr":0.1,"skipped_steps":0,"grad_norm":1.0,)"
                         R"("tokens_per_s":9.0,"fp8_overflows":1,"fp8_underflows":4,)"
                         R"("fp8_tensors":{"h.grad":3}})"
                         "\n")
                .find("fp8_tensors['h.grad'] is not {overflows: integer, underflows: integer}"),
            std::string::npos);
}

// A run without a logged loss scale (bfloat16: no scaler) writes step records without it.
TEST(MetricsReader, AStepRecordWithoutALossScaleReadsAsNone) {
  std::string bf16 = kRunLine;
  bf16.replace(bf16.find("\"float16\""), 9, "\"bfloat16\"");
  bf16.replace(bf16.find("\"dynamic\""), 9, "\"none\"");
  const RunLog log = parse_metrics(
      bf16 + "\n" +
          R"({"step":10,"loss":5.0,"lr":0.002,"skipped_steps":0,"grad_norm":1.5,"tokens_per_s":9.0})",
      "m");
  EXPECT_EQ(log.run.format, numerics::Format::bfloat16);
  EXPECT_EQ(log.run.loss_scaling, LossScalingMode::none);
  ASSERT_EQ(log.windows.size(), 1u);
  EXPECT_FALSE(log.windows[0].loss_scale.has_value());
  EXPECT_EQ(log.windows[0].grad_norm, 1.5);
  EXPECT_FALSE(log.windows[0].peak_rss_mib.has_value());
  // A loss_scale that is there must be a number (or null: not finite).
  EXPECT_EQ(expect_error(std::string(kRunLine) + "\n" +
                         R"({"step":1,"loss":5.0,"lr":0.1,"loss_scale":"big","skipped_steps":0,)"
                         R"("grad_norm":1.0,"tokens_per_s":9.0})"),
            "runs/x/metrics.jsonl:2: 'loss_scale' is a string, expected a number");
}

TEST(MetricsReader, ARunRecordDropsWhatCameAfterItsStartStep) {
  auto window = [](int step) {
    return R"({"step":)" + std::to_string(step) +
           R"(,"loss":1.0,"lr":0.1,"loss_scale":1.0,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":1.0})" +
           "\n";
  };
  std::string resumed = kRunLine;
  resumed.replace(resumed.find("\"start_step\":0"), 14, "\"start_step\":20");
  const std::string text = std::string(kRunLine) + "\n" + window(10) + window(20) +
                           R"({"eval_step":20,"loss":2.0,"steps":1})"
                           "\n" +
                           R"({"skipped_step":25,"loss_scale":2.0,"overflowed":[]})"
                           "\n" +
                           window(30) + resumed + "\n" + window(30) + window(40);
  const RunLog log = parse_metrics(text, "m");
  ASSERT_EQ(log.windows.size(), 4u);  // 10, 20 kept; the first 30 dropped; 30, 40 again
  EXPECT_EQ(log.windows[1].step, 20);
  EXPECT_EQ(log.windows[2].step, 30);
  EXPECT_EQ(log.windows[3].step, 40);
  EXPECT_EQ(log.evals.size(), 1u);
  EXPECT_TRUE(log.skips.empty());
  EXPECT_EQ(log.run.start_step, 20);
  // A fresh run in the same directory (start 0) starts the history over.
  EXPECT_EQ(parse_metrics(text + kRunLine + "\n" + window(5), "m").windows.size(), 1u);
}

TEST(MetricsReader, BrokenFilesAreNamedByFileAndLine) {
  const std::string head = std::string(kRunLine) + "\n";
  const std::string good =
      R"({"step":2,"loss":5.0,"lr":0.1,"loss_scale":8.0,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":9.0})"
      "\n";
  EXPECT_EQ(expect_error(head + good + R"({"step":4,"loss":4.9,"lr":0.)"),
            "runs/x/metrics.jsonl:3: not one JSON object (a torn or truncated line?)");
  EXPECT_EQ(
      expect_error(
          head +
          R"({"step":2,"loss":5.0,"loss_scale":8.0,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":9.0})"),
      "runs/x/metrics.jsonl:2: the step record has no 'lr' field");
  // A number past a double's range is named (it is no torn line).
  EXPECT_EQ(expect_error(head + good + R"({"step":4,"loss":1e400,"lr":0.1})"),
            "runs/x/metrics.jsonl:3: a number past a double's range (number overflow parsing "
            "'1e400')");
  const std::string digits(100000, '9');
  const std::string long_number = expect_error(head + "{\"step\":" + digits + "e999}");
  EXPECT_NE(long_number.find("metrics.jsonl:2: a number past a double's range (number overflow "
                             "parsing '999999"),
            std::string::npos)
      << long_number;
  EXPECT_LT(long_number.size(), 200u) << "the number is cut";
  EXPECT_EQ(expect_error(head + good + R"({"eval_step":"two","loss":1.0,"steps":1})"),
            "runs/x/metrics.jsonl:3: 'eval_step' is a string, expected an integer from 0 to "
            "2^63 - 1");
  // Counts and rates are never negative; a key twice in one record is refused.
  EXPECT_EQ(expect_error(head + good + R"({"eval_step":-4,"loss":1.0,"steps":1})"),
            "runs/x/metrics.jsonl:3: 'eval_step' is -4, expected an integer from 0 to 2^63 - 1");
  EXPECT_EQ(
      expect_error(
          head +
          R"({"step":2,"loss":5.0,"lr":0.1,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":-9.0})"),
      "runs/x/metrics.jsonl:2: 'tokens_per_s' is negative");
  EXPECT_EQ(expect_error(head + R"({"eval_step":4,"eval_step":5,"loss":1.0,"steps":1})"),
            "runs/x/metrics.jsonl:2: the key 'eval_step' is given twice in one object (which "
            "value is meant?)");
  // Steps go forward within a run: after its start step, each after the one before.
  EXPECT_EQ(expect_error(head + good + good),
            "runs/x/metrics.jsonl:3: 'step' 2 does not come after the one before, 2 (steps only "
            "go forward within a run; a resumed run starts with a run record)");
  std::string resumed = kRunLine;
  resumed.replace(resumed.find("\"start_step\":0"), 14, "\"start_step\":2");
  EXPECT_EQ(expect_error(head + good + resumed + "\n" + good),
            "runs/x/metrics.jsonl:4: 'step' 2 does not come after the run's start step 2 (steps "
            "only go forward within a run; a resumed run starts with a run record)");
  const std::string skip3 = R"({"skipped_step":3,"loss_scale":1.0,"overflowed":[]})"
                            "\n";
  EXPECT_EQ(expect_error(head + skip3 + R"({"skipped_step":1,"loss_scale":1.0,"overflowed":[]})"),
            "runs/x/metrics.jsonl:3: 'skipped_step' 1 does not come after the one before, 3 "
            "(steps only go forward within a run; a resumed run starts with a run record)");
  EXPECT_EQ(expect_error(head + R"({"skipped_step":3,"loss_scale":1.0,"overflowed":"w"})"),
            "runs/x/metrics.jsonl:2: 'overflowed' is a string, expected a list of strings");
  EXPECT_EQ(expect_error(head + R"({"what":1})"),
            "runs/x/metrics.jsonl:2: not a run, step, eval_step, skipped_step, routes, "
            "fallback_step, end or precision_stats record");
  EXPECT_EQ(expect_error(good),
            "runs/x/metrics.jsonl:1: a record before the run record (every run writes one first; "
            "this file was not written by mantissa train, or by an older version)");
  // An evaluation before any training (eval of a copied checkpoint at step 2, then a run
  // resumed from it) is kept.
  std::string good4 = good;
  good4.replace(good4.find("\"step\":2"), 8, "\"step\":4");
  const RunLog evaluated_first = parse_metrics(
      std::string(R"({"eval_step":2,"loss":2.0,"steps":1})") + "\n" + resumed + "\n" + good4,
      "m.jsonl");
  EXPECT_EQ(evaluated_first.evals.size(), 1u);
  EXPECT_EQ(evaluated_first.windows.size(), 1u);
  EXPECT_EQ(expect_error(""),
            "runs/x/metrics.jsonl: no run record (is this a mantissa metrics.jsonl?)");
  // The tenth audit: a torn line of 1 GB took 7 GB of memory and 30 s to be said torn; a line
  // longer than 64 MiB (no record comes near) is refused before it is parsed.
  EXPECT_EQ(
      expect_error(head + "{\"step\":1,\"note\":\"" + std::string(std::size_t{64} << 20, 'a')),
      "runs/x/metrics.jsonl:2: a line of 67108882 bytes, longer than any record (at most "
      "67108864; a damaged file?)");
  std::string bad_format = kRunLine;
  bad_format.replace(bad_format.find("\"float16\""), 9, "\"float99\"");
  EXPECT_EQ(expect_error(bad_format),
            "runs/x/metrics.jsonl:1: 'format' is 'float99', not a number format");
}

TEST(MetricsLines, ARoutesRecordIsTheDocumentedJsonAndReadsBack) {
  kernels::RouteRecord r;
  r.key = {2048, 1536, 384, false, true, numerics::Format::bfloat16, 1, true};
  r.route = precision::MatmulRoute::onednn_bf16;
  r.source = kernels::RouteSource::measured;
  r.gflops[static_cast<std::size_t>(precision::MatmulRoute::fp32)] = 200.5;
  r.gflops[static_cast<std::size_t>(precision::MatmulRoute::onednn_bf16)] = 440.25;
  const std::string line = metrics_line(RoutesRecord{1, {r}, {}});
  EXPECT_EQ(line,
            R"({"products":[{"format":"bfloat16","gflops":{"fp32":200.5,"onednn_bf16":440.25},)"
            R"("k":384,"m":2048,"n":1536,"passes":1,"route":"onednn_bf16","source":"measured",)"
            R"("threads":"all","trans":"NT"}],"routes":1})");
  const RunLog log = parse_metrics(std::string(kRunLine) + "\n" + line + "\n", "m.jsonl");
  ASSERT_EQ(log.routes.size(), 1u);
  EXPECT_EQ(log.routes[0].step, 1);
  ASSERT_EQ(log.routes[0].products.size(), 1u);
  const kernels::RouteRecord& back = log.routes[0].products[0];
  EXPECT_EQ(back.key, r.key);
  EXPECT_EQ(back.route, r.route);
  EXPECT_EQ(back.source, r.source);
  EXPECT_EQ(back.gflops, r.gflops);
  // A product that names no route, an unknown source, a list that is not one.
  const std::string head = std::string(kRunLine) + "\n";
  EXPECT_EQ(expect_error(head + R"({"routes":1,"products":[{"m":1}]})"),
            "runs/x/metrics.jsonl:2: 'products[0].n' is missing or mistyped");
  EXPECT_EQ(expect_error(head + R"({"routes":1,"products":[{"m":1,"n":1,"k":1,"trans":"NN",)"
                                R"("format":"bfloat16","passes":1,"threads":"all",)"
                                R"("route":"bf16","source":"guessed","gflops":{}}]})"),
            "runs/x/metrics.jsonl:2: 'products[0]' is not a product with a route and its rates");
  EXPECT_EQ(expect_error(head + R"({"routes":1,"products":{"m":1}})"),
            "runs/x/metrics.jsonl:2: 'products' is not a list");
}

TEST(MetricsLines, AConvolutionsRouteNamesItsProductAndReadsBack) {
  kernels::RouteRecord r;
  r.key = kernels::conv_key(kernels::ProductKind::conv_forward,
                            kernels::ConvKey{128, 16, 14, 14, 32, 3, 3, 1, 1, true},
                            numerics::Format::float32, 1, true);
  r.route = precision::MatmulRoute::onednn_fp32;
  r.gflops[static_cast<std::size_t>(precision::MatmulRoute::onednn_fp32)] = 80.5;
  const std::string line = metrics_line(RoutesRecord{2, {r}, {}});
  EXPECT_EQ(line, R"({"products":[{"format":"float32","gflops":{"onednn_fp32":80.5},)"
                  R"("k":144,"m":32,"n":25088,"passes":1,)"
                  R"("product":"conv_fwd 128 16 14 14 32 3 3 1 1 bias","route":"onednn_fp32",)"
                  R"("source":"measured","threads":"all","trans":"NN"}],"routes":2})");
  const RunLog log = parse_metrics(std::string(kRunLine) + "\n" + line + "\n", "m.jsonl");
  ASSERT_EQ(log.routes.size(), 1u);
  ASSERT_EQ(log.routes[0].products.size(), 1u);
  EXPECT_EQ(log.routes[0].products[0].key, r.key);
  // A product whose shape is not the one its m, n, k make.
  std::string bad = line;
  bad.replace(bad.find("\"k\":144"), 7, "\"k\":145");
  EXPECT_EQ(expect_error(std::string(kRunLine) + "\n" + bad),
            "runs/x/metrics.jsonl:2: 'products[0]' is not a product with a route and its rates");
}

TEST(MetricsReader, AMissingRunDirectoryIsNamed) {
  try {
    read_run_log("/nonexistent/run");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/run/metrics.jsonl: cannot open the metrics file (is /nonexistent/run "
              "a run directory?) (No such file or directory)");
  }
}

struct Lines final : TrainerEvents {
  std::vector<std::string> messages;
  void message(const std::string& line) override { messages.push_back(line); }
};

// float16 at loss scale 2^30: the loss's gradient is the scale itself, which the scaling op
// makes in float16 for the loss op (2^30 is far past 65504): every step overflows there, and
// the scale halves after each (tolerance 0). The log line names that op; every parameter's
// gradient ends non-finite, and the record keeps their names too.
TEST(OverflowAttribution, EachSkippedStepIsNamedAndRecorded) {
  const fs::path dir =
      fs::temp_directory_path() / ("mantissa_overflow_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "text.txt");
    for (int i = 0; i < 200; ++i) out << "overflowing gradients are named, step by step\n";
  }
  const TrainerConfig c = parse_config(R"(
trainer:
  init:
    model: {name: gpt, max_position_embeddings: 32, hidden_size: 16, num_hidden_layers: 1,
            num_heads: 2, filter_size: 32}
    optimizer: {AdamW: {learning_rate: 1.0e-3}}
    precision: {fp16_type: float16, loss_scaling_factor: dynamic, initial_loss_scale: 1073741824,
                max_loss_scale: 1073741824}
    loop: {max_steps: 2}
    checkpoint: {dir: )" + (dir / "run").string() +
                                           R"(}
    logging: {log_steps: 2}
  fit:
    train_dataloader: {dataset: text, path: )" +
                                           (dir / "text.txt").string() +
                                           R"(, batch_size: 2, context: 32}
)",
                                       {}, "overflow");
  Lines events;
  Trainer(c, {&events, {}}).run(RunMode::train);
  std::vector<std::string> skipped;
  for (const std::string& m : events.messages) {
    if (m.rfind("skipped step", 0) == 0) skipped.push_back(m);
  }
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0],
            "skipped step 1: non-finite gradients at loss scale 2^30, first in the backward of "
            "scale at the model's top level (reached 17 parameters)");
  EXPECT_EQ(skipped[1],
            "skipped step 2: non-finite gradients at loss scale 2^29, first in the backward of "
            "scale at the model's top level (reached 17 parameters)");

  const RunLog log = read_run_log((dir / "run").string());
  EXPECT_EQ(log.run.format, numerics::Format::float16);
  EXPECT_EQ(log.run.loss_scaling, LossScalingMode::dynamic);
  ASSERT_EQ(log.skips.size(), 2u);
  EXPECT_EQ(log.skips[0].step, 1);
  EXPECT_EQ(log.skips[0].loss_scale, 1073741824.0);
  EXPECT_EQ(log.skips[1].step, 2);
  EXPECT_EQ(log.skips[1].loss_scale, 536870912.0);
  for (const SkipRecord& s : log.skips) {
    EXPECT_EQ(s.overflowed.size(), 17u);
    EXPECT_NE(std::find(s.overflowed.begin(), s.overflowed.end(), "head.weight"),
              s.overflowed.end());
    ASSERT_TRUE(s.first_nonfinite.has_value());
    EXPECT_EQ(*s.first_nonfinite, (autograd::NonfiniteOrigin{"scale", ""}));
  }
  ASSERT_EQ(log.windows.size(), 1u);
  EXPECT_EQ(log.windows[0].skipped_steps, 2);
  EXPECT_GT(log.windows[0].peak_rss_mib.value_or(0), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mantissa::report
