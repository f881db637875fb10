// `mantissa compare`: one job trained in several formats, one after another (same seed, same
// batches), each in its own process, optionally with several seeds each; then their
// throughput measured interleaved in this process, and the precision report of all of them.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>

#include "bible_corpus.hpp"
#include "child_process.hpp"
#include "commands.hpp"
#include "decimal_option.hpp"
#include "mantissa/bench/benchmark.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "mantissa/write_file.hpp"
#include "precision_overrides.hpp"
#include "report_output.hpp"

namespace mantissa::app {
namespace {

// A curve of a run this short or shorter gets a point per step; a longer run logs every
// max_steps / kCurvePoints steps (never less often than its config says).
constexpr std::int64_t kCurvePoints = 500;
constexpr const char* kLogStepsKey = "trainer.init.logging.log_steps";

struct CompareArgs {
  std::string config, formats = "float32,bfloat16,float16,cbfloat16", out;
  std::optional<std::int64_t> steps;  // unset: the config's max_steps
  std::int64_t seeds = 1;
  std::int64_t throughput_steps = 10;
  // logging.precision_stats_steps for every run; unset: the config's
  std::optional<std::int64_t> precision_stats;
  std::vector<std::string> overrides;
};

// One training run of the comparison: a format and a seed, and its directory.
struct CompareRun {
  TrainingPrecision format{};
  std::uint64_t seed = 0;
  std::string dir;
};

// <out>/throughput.jsonl may be replaced only when absent or an earlier compare's records
// (a regular file that reads as throughput records): anything else is refused, naming it.
void check_throughput_out(const std::string& path) {
  require_regular_or_absent(path, "the interleaved throughput");
  if (!std::filesystem::exists(path)) return;
  try {
    (void)report::read_throughput(path);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                "; compare replaces only an earlier compare's throughput.jsonl: give another "
                "--out, or move it away");
  }
}

// The config overrides of one run: the user's inside the format's (precision_overrides),
// then the run directory, the step count, the logging interval and the seed.
std::vector<std::string> run_overrides(const CompareArgs& a, const CompareRun& run,
                                       std::optional<std::int64_t> log_steps) {
  std::vector<std::string> o =
      around(precision_overrides(run.format, "", std::nullopt, ""), a.overrides);
  o.push_back("trainer.init.checkpoint.dir=" + run.dir);
  if (a.steps) o.push_back("trainer.init.loop.max_steps=" + std::to_string(*a.steps));
  if (a.precision_stats) {
    o.push_back("trainer.init.logging.precision_stats_steps=" + std::to_string(*a.precision_stats));
  }
  if (log_steps) o.push_back(std::string(kLogStepsKey) + "=" + std::to_string(*log_steps));
  o.push_back("trainer.init.seed=" + std::to_string(run.seed));
  return o;
}

// Enough points per curve: unless the user chose log_steps (--set), a run of up to
// kCurvePoints steps logs every step, a longer one about kCurvePoints times; never less often
// than the config says. nullopt: the config's stands.
std::optional<std::int64_t> logging_interval(const CompareArgs& a, const config::TrainerConfig& c) {
  for (const std::string& o : a.overrides) {
    if (o.rfind(std::string(kLogStepsKey) + "=", 0) == 0) return std::nullopt;
  }
  const std::int64_t every = std::max<std::int64_t>(1, c.loop.max_steps / kCurvePoints);
  if (every >= c.logging.log_steps) return std::nullopt;
  fmt::print(stderr, "compare: logging every {} (the config logs every {}; --set {}=N chooses)\n",
             every == 1 ? std::string("step") : std::to_string(every) + " steps",
             c.logging.log_steps, kLogStepsKey);
  return every;
}

// After a run: how it ended, from its metrics (the report shows the same).
void say_how_it_ended(const std::string& label, const std::string& dir) {
  try {
    const report::RunLog log = report::read_run_log(dir);
    fmt::print(stderr, "compare: {}: {}\n", label, report::outcome_text(log));
    for (const std::string& f : report::fallback_texts(log))
      fmt::print(stderr, "compare: {}: {}\n", label, f);
  } catch (const Error& e) {
    fmt::print(stderr, "compare: {}: its metrics cannot be read: {}\n", label, e.what());
  }
}

// Every format's training steps in this process, step by step in turn (bench train
// --interleave): the throughput the report compares. Written to <out>/throughput.jsonl.
std::vector<report::ThroughputRecord> measure_throughput(
    const CompareArgs& a, const std::vector<TrainingPrecision>& formats,
    const std::vector<config::TrainerConfig>& configs, const std::string& out) {
  bench::BenchOptions options;
  options.steps = a.throughput_steps;
  options.measure_peak = false;
  fmt::print(stderr,
             "compare: throughput of every format interleaved in this process ({} "
             "timed steps each, after {} warm-up)\n",
             options.steps, options.warmup);
  const std::vector<bench::BenchResult> results = bench::run_interleaved_benchmark(
      configs, options, [](const std::string& l) { fmt::print(stderr, "{}\n", l); },
      bible_kjv_text);
  std::vector<report::ThroughputRecord> records;
  std::string lines;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const bench::BenchResult& r = results[i];
    const auto [fastest, slowest] =
        std::minmax_element(r.step_seconds.begin(), r.step_seconds.end());
    const double items = static_cast<double>(r.items_per_step);
    records.push_back({training_precision_name(formats[i]), r.unit, r.items_per_second,
                       items / *slowest, items / *fastest,
                       static_cast<std::int64_t>(r.step_seconds.size())});
    lines += report::metrics_line(records.back()) + "\n";
    fmt::print(stderr, "compare: {:<10} {:>10.0f} {}/s  {:.3f}x {}'s\n", records.back().run,
               r.items_per_second, r.unit, r.items_per_second / results.front().items_per_second,
               records.front().run);
  }
  replace_file((std::filesystem::path(out) / "throughput.jsonl").string(), lines,
               "the interleaved throughput");
  return records;
}

int run(const CompareArgs& a) {
  if (a.steps && *a.steps < 1)
    throw Error("--steps: " + std::to_string(*a.steps) + " must be at least 1");
  if (a.precision_stats && *a.precision_stats < 0) {
    throw Error("--precision-stats: " + std::to_string(*a.precision_stats) +
                " must be at least 0 (0: no sampled steps)");
  }
  if (a.seeds < 1 || a.seeds > 100)
    throw Error("--seeds: " + std::to_string(a.seeds) + " (expected 1 to 100)");
  if (a.throughput_steps < 0)
    throw Error("--throughput-steps: " + std::to_string(a.throughput_steps) +
                " (expected 0, none, or more)");
  const std::vector<TrainingPrecision> formats = parse_training_precisions(a.formats, "--formats");
  const std::string out =
      a.out.empty() ? "runs/compare-" + std::filesystem::path(a.config).stem().string() : a.out;
  // The directory of every run: something else there is found now, not when the first run
  // starts.
  if (std::error_code ec;
      std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec)) {
    throw Error("--out " + out + ": is not a directory (compare writes a directory of runs " +
                "there: give another --out)");
  }
  // The config as the user gave it: the first seed, the step count, the logging interval.
  const config::TrainerConfig base =
      config::load_config(a.config, run_overrides(a, {formats.front(), 0, out}, std::nullopt));
  const std::uint64_t first_seed =
      config::load_config(
          a.config, around(precision_overrides(formats.front(), "", std::nullopt, ""), a.overrides))
          .seed;
  if (static_cast<std::uint64_t>(a.seeds - 1) >
      std::numeric_limits<std::uint64_t>::max() - first_seed) {
    throw Error(
        fmt::format("--seeds: {} seeds from trainer.init.seed {} pass the largest seed, "
                    "2^64 - 1 (give a smaller seed)",
                    a.seeds, first_seed));
  }
  const std::optional<std::int64_t> log_steps = logging_interval(a, base);
  std::vector<CompareRun> runs;
  std::vector<config::TrainerConfig> first_seed_configs;  // one per format
  for (const TrainingPrecision& f : formats) {
    for (std::int64_t s = 0; s < a.seeds; ++s) {
      CompareRun r{f, first_seed + static_cast<std::uint64_t>(s), ""};
      std::filesystem::path dir = std::filesystem::path(out) / training_precision_name(f);
      if (a.seeds > 1) dir /= "seed-" + std::to_string(r.seed);
      r.dir = dir.string();
      // Every error before any work.
      config::TrainerConfig c = config::load_config(a.config, run_overrides(a, r, log_steps));
      if (s == 0) first_seed_configs.push_back(std::move(c));
      runs.push_back(r);
    }
  }
  // A fresh run never takes over a run directory that holds checkpoints (the trainer refuses
  // it): a compare into an earlier one's --out is refused here, before any work, whole.
  // Either layout of an earlier compare counts (DIR/<format>, or DIR/<format>/seed-<seed>
  // with --seeds), whatever this one's --seeds is.
  for (const TrainingPrecision& f : formats) {
    const std::filesystem::path format_dir =
        std::filesystem::path(out) / training_precision_name(f);
    std::vector<std::filesystem::path> dirs{format_dir};
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(format_dir, ec)) {
      if (e.path().filename().string().starts_with("seed-")) dirs.push_back(e.path());
    }
    for (const std::filesystem::path& d : dirs) {
      const std::vector<std::string> held = train::list_checkpoints(d.string());
      if (!held.empty()) {
        throw Error("--out " + out + ": " + d.string() +
                    " already holds the checkpoints of an earlier run (" +
                    std::filesystem::path(held.back()).filename().string() +
                    "); compare never overwrites or deletes them: give another --out, or move " +
                    out + " away");
      }
    }
  }
  // What compare writes at the end is checked now, not after hours of training: the report
  // replaces only an earlier report, the throughput only an earlier compare's records.
  std::vector<std::string> run_dirs;
  for (const CompareRun& r : runs) run_dirs.push_back(r.dir);
  check_report_out((std::filesystem::path(out) / "report.html").string(), run_dirs);
  check_throughput_out((std::filesystem::path(out) / "throughput.jsonl").string());
  std::vector<std::string> drawn;
  int status = 0;
  bool interrupted = false;
  for (std::size_t i = 0; i < runs.size() && !interrupted; ++i) {
    const CompareRun& run = runs[i];
    std::string label = training_precision_name(run.format);
    if (a.seeds > 1) label += " seed " + std::to_string(run.seed);
    fmt::print(stderr, "compare: {} ({} of {}), run directory {}\n", label, i + 1, runs.size(),
               run.dir);
    std::vector<std::string> args{"train", "--config", a.config, "--mode", "train_and_eval"};
    for (const std::string& o : run_overrides(a, run, log_steps)) {
      args.push_back("--set");
      args.push_back(o);
    }
    const ChildResult r = run_self(args);
    if (std::filesystem::exists(std::filesystem::path(run.dir) / "metrics.jsonl")) {
      drawn.push_back(run.dir);
      say_how_it_ended(label, run.dir);
    }
    if (r.exit_status != 0) {
      fmt::print(stderr, "compare: the {} run failed (exit status {})\n", label, r.exit_status);
      if (status == 0) status = r.exit_status;
    }
    if (r.interrupted) {
      fmt::print(stderr, "compare: interrupted; the report shows the runs so far\n");
      interrupted = true;
    }
  }
  if (drawn.empty()) throw Error("compare: no run wrote metrics; there is nothing to report");
  report::ReportOptions options;
  options.group_seeds = a.seeds > 1;
  options.subtitle =
      a.config + " in " + a.formats +
      (a.seeds > 1 ? fmt::format(", {} seeds each (from {})", a.seeds, first_seed) : std::string());
  if (a.throughput_steps > 0 && !interrupted) {
    try {
      options.throughput = measure_throughput(a, formats, first_seed_configs, out);
    } catch (const Error& e) {
      fmt::print(stderr, "compare: the interleaved throughput was not measured: {}\n", e.what());
      if (status == 0) status = kExitError;
    }
  }
  const std::string report = (std::filesystem::path(out) / "report.html").string();
  write_report(drawn, report, options);
  std::printf("report: %s\n", report.c_str());
  return status;
}

}  // namespace

Action register_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare",
      "Train one config in several formats (same seed and batches) and draw the precision report");
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("--config", a->config, "The YAML config (docs/config.md)")->required();
  cmd->add_option(
      "--formats", a->formats,
      "Comma-separated: " + training_precision_names() +
          " (default float32,bfloat16,float16,cbfloat16; fp8 (delayed scaling) to nvfp4: the "
          "linear layers' recipe, the rest in bfloat16)");
  cmd->add_option("--steps", a->steps, "Training steps per format (default: the config's)")
      ->check(decimal<std::int64_t>());
  cmd->add_option("--precision-stats", a->precision_stats,
                  "Sample what every rounding loses, per layer, every N steps and on step 1 "
                  "(logging.precision_stats_steps; the report's heat maps)")
      ->check(decimal<std::int64_t>());
  cmd->add_option("--seeds", a->seeds,
                  "Train each format with N seeds (the config's seed and the next N-1) and draw "
                  "their mean and range, so differences can be judged against run-to-run noise "
                  "(default 1)")
      ->check(decimal<std::int64_t>());
  cmd->add_option("--throughput-steps", a->throughput_steps,
                  "Timed steps per format of the interleaved throughput measurement after the "
                  "runs (default 10; 0: none, and the report compares no throughput)")
      ->check(decimal<std::int64_t>());
  cmd->add_option("--out", a->out,
                  "Directory for the runs (one per format, or per format and seed) and "
                  "report.html (default runs/compare-<config name>)");
  cmd->add_option("--set", a->overrides,
                  "Override a config key in every run: a.b.c=value (repeatable)");
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*a);
  };
}

}  // namespace mantissa::app
