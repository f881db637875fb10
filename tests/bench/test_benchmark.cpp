// mantissa bench train's library half: the FLOP model (hand-derived) and the timing run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "error_of.hpp"
#include "mantissa/bench/benchmark.hpp"
#include "mantissa/error.hpp"

namespace mantissa::bench {
namespace {

namespace fs = std::filesystem;
using config::parse_config;
using config::TrainerConfig;

TrainerConfig tiny_gpt(const std::string& text) {
  return parse_config(R"(
trainer:
  init:
    seed: 1
    model: {name: gpt, vocab_size: 256, max_position_embeddings: 16, hidden_size: 32,
            num_hidden_layers: 2, num_heads: 2, filter_size: 64}
    optimizer: {AdamW: {learning_rate: 1.0e-3}}
    precision: {fp16_type: bfloat16}
    loop: {grad_accum_steps: 2}
  fit:
    train_dataloader: {dataset: text, path: )" +
                          text + R"(, batch_size: 3, context: 16}
)",
                      {}, "tiny");
}

TEST(Benchmark, FlopModelIsThePeersFormula) {
  const TrainerConfig c = tiny_gpt("unused.txt");
  // 2 micro-batches x (6 x 1000 parameters x 48 tokens + 12 x 2 layers x 32 x 16^2 x 3).
  EXPECT_DOUBLE_EQ(training_flops_per_step(c, 1000),
                   2.0 * (6.0 * 1000 * 48 + 12.0 * 2 * 32 * 256 * 3));
}

TEST(Benchmark, TimesEveryStepAfterWarmUpAndProfilesThem) {
  const fs::path dir = fs::temp_directory_path() / ("mantissa_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string text = (dir / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 200; ++i) out << "benchmarks time what the trainer does, step by step\n";
  }
  BenchOptions o;
  o.steps = 3;
  o.warmup = 2;
  o.profile = true;
  o.measure_peak = false;
  int lines = 0;
  const BenchResult r =
      run_train_benchmark(tiny_gpt(text), o, [&](const std::string&) { ++lines; });
  EXPECT_EQ(lines, 5);
  EXPECT_EQ(r.step_seconds.size(), 3u);
  EXPECT_EQ(r.losses.size(), 5u);
  EXPECT_EQ(r.items_per_step, 2 * 3 * 16);
  EXPECT_EQ(r.unit, "tokens");
  EXPECT_EQ(r.precision, "bfloat16, POL 1");
  std::vector<double> sorted = r.step_seconds;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(r.median_seconds, sorted[1]);
  EXPECT_DOUBLE_EQ(r.items_per_second, 96.0 / r.median_seconds);
  EXPECT_GT(r.peak_rss_mib, 1.0);
  EXPECT_EQ(r.gemm_peak_gflops, 0.0);
  EXPECT_EQ(r.mfu(), 0.0);
  ASSERT_TRUE(r.profile.has_value());
  // The scopes cover the steps: their sum is at most the timed wall time and most of it.
  double scoped = 0;
  for (const auto& phase : *r.profile)
    for (double s : phase) scoped += s;
  EXPECT_LE(scoped, r.profiled_seconds * 1.001);
  EXPECT_GT(scoped, r.profiled_seconds * 0.5);
  const double gemm = (*r.profile)[0][static_cast<int>(kernels::OpClass::gemm)];
  EXPECT_GT(gemm, 0.0);
  EXPECT_NE(format_bench_report(r).find("time per step by op class"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Benchmark, RejectsNonsenseOptions) {
  BenchOptions o;
  o.steps = 0;
  EXPECT_THROW(run_train_benchmark(tiny_gpt("unused.txt"), o), Error);
}

// --json appends: only to a new or empty file, or to one of bench records (a link to one
// counts); anything else is refused, naming it, before a benchmark runs.
TEST(Benchmark, RecordsAreAppendedOnlyToAFileOfRecords) {
  using testing::error_of;
  const fs::path dir = fs::temp_directory_path() / "mantissa_bench_records";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  EXPECT_EQ(error_of([&] { check_bench_records_file((dir / "new.jsonl").string()); }),
            "(no error)");
  EXPECT_EQ(error_of([&] { check_bench_records_file(write("empty.jsonl", "")); }), "(no error)");
  BenchResult r;
  r.model = "gpt";
  r.precision = "float32";
  const std::string records = write("records.jsonl", bench_result_json(r) + "\n");
  EXPECT_EQ(error_of([&] { check_bench_records_file(records); }), "(no error)");
  fs::create_symlink(records, dir / "link.jsonl");
  EXPECT_EQ(error_of([&] { check_bench_records_file((dir / "link.jsonl").string()); }),
            "(no error)");
  const std::string not_records =
      ": holds something other than bench records (its first line is not one); bench appends "
      "only to a new file, an empty one, or one it wrote before";
  for (const auto& [name, text] : std::vector<std::pair<const char*, std::string>>{
           {"ckpt.safetensors", std::string("\x10\0\0\0\0\0\0\0", 8) + "{\"a\":1}        "},
           {"metrics.jsonl", "{\"record\":\"run\",\"model\":\"gpt\"}\n"},
           {"notes.txt", "my notes\n"}}) {
    const std::string path = write(name, text);
    EXPECT_EQ(error_of([&] { check_bench_records_file(path); }), path + not_records);
  }
  EXPECT_EQ(error_of([&] { check_bench_records_file(dir.string()); }),
            dir.string() + ": is a directory; bench appends its records only to a regular file");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mantissa::bench
