// `mantissa bench train`: training throughput of a config (bench/benchmark.hpp).
#include <fstream>
#include <optional>
#include <string>

#include "bible_corpus.hpp"
#include "commands.hpp"
#include "decimal_option.hpp"
#include "mantissa/bench/benchmark.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/optim/training_state.hpp"
#include "mantissa/write_file.hpp"
#include "precision_overrides.hpp"
#include "together.hpp"

namespace mantissa::app {
namespace {

struct BenchArgs {
  std::string config, precision, loss_scaling, route, json, master_weights, state_dtype, gemm_isa;
  std::optional<int> opt_level;
  bool interleave = false;
  std::vector<std::string> overrides;
  bench::BenchOptions options;
};

// The options a float32 run (mixed precision off) has no use for, said once before it runs:
// a loss scale, a precision_opt_level, a route on the bf16 units.
void say_unused_by_float32(const BenchArgs& a, std::optional<TrainingPrecision> precision) {
  if (!precision || precision->format != numerics::Format::float32) return;
  std::string unused;
  const auto add = [&](const std::string& what) { unused += (unused.empty() ? "" : ", ") + what; };
  if (!a.loss_scaling.empty()) add("--loss-scaling " + a.loss_scaling);
  if (a.opt_level) add("--opt-level " + std::to_string(*a.opt_level));
  const auto route = find_named(precision::kMatmulRouteNames, a.route);
  if (route && kernels::on_bf16_units(*route)) add("--route " + a.route);
  if (!unused.empty()) {
    std::fprintf(stderr, "bench: float32 runs without mixed precision: %s %s nothing for it\n",
                 unused.c_str(), unused.find(',') == std::string::npos ? "changes" : "change");
  }
}

// The config a run trains with: the file, the user's --set inside the precision's overrides
// (none: the config's precision) and the other precision options.
config::TrainerConfig make_config(const BenchArgs& a, std::optional<TrainingPrecision> precision) {
  std::vector<std::string> overrides =
      around(precision_overrides(precision, a.loss_scaling, a.opt_level, a.route), a.overrides);
  if (!a.master_weights.empty()) {
    overrides.push_back("trainer.init.precision.master_weights=" + a.master_weights);
  }
  config::TrainerConfig c = config::load_config(a.config, overrides);
  if (!a.state_dtype.empty()) {
    c.optimizer.state_format =
        parse_named(optim::kStateFormatNames, a.state_dtype, "--state-dtype");
  }
  return c;
}

void append_json(const std::string& path, const bench::BenchResult& r) {
  if (path.empty()) return;
  try {
    // A file whose last record lacks its newline (written by hand, or cut short) gets one
    // first: the new record must start a line of its own, or both would be lost.
    std::string line = bench::bench_result_json(r) + "\n";
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      if (in.get() != '\n') line.insert(line.begin(), '\n');
    }
    append_file(path, line, "--json records");
  } catch (const Error& e) {
    throw Error(std::string("--json: ") + e.what());
  }
}

// --interleave: every precision of the list in this process, step by step in turn.
int run_interleaved(const BenchArgs& a, const dist::Communicator& world) {
  if (world.size() > 1) throw Error("bench train --interleave runs in one process (not mpirun)");
  if (a.precision.empty()) {
    throw Error(
        "--interleave needs --precision with the runs to interleave (e.g. "
        "float32,bfloat16)");
  }
  std::vector<config::TrainerConfig> configs;
  for (const TrainingPrecision& p : parse_training_precisions(a.precision, "--precision")) {
    configs.push_back(make_config(a, p));
    say_unused_by_float32(a, p);
  }
  const std::vector<bench::BenchResult> rs = bench::run_interleaved_benchmark(
      configs, a.options, [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); },
      bible_kjv_text);
  for (const bench::BenchResult& r : rs) {
    std::printf("%s\n", bench::format_bench_report(r).c_str());
    append_json(a.json, r);
  }
  std::printf("%s\n", kernels::route_table_text(rs.back().routes).c_str());
  std::printf("interleaved in one process: %s per second against %s's (median step)\n",
              rs.front().unit.c_str(), rs.front().precision.c_str());
  for (const bench::BenchResult& r : rs) {
    std::printf("  %-28s %10.0f  %.3fx\n", r.precision.c_str(), r.items_per_second,
                r.items_per_second / rs.front().items_per_second);
  }
  return 0;
}

// --gemm-isa: the fp32 route's micro-kernels (e.g. avx2 on an AVX-512 CPU, to time the code an
// AVX2-only CPU runs); mantissa::Error naming the option when unknown or not on this CPU.
void choose_gemm_isa(const std::string& word) {
  if (word.empty()) return;
  const kernels::GemmIsa isa = parse_named(kernels::kGemmIsaNames, word, "--gemm-isa");
  if (!kernels::cpu_supports(isa)) {
    throw Error("--gemm-isa: this CPU cannot run the '" + word + "' micro-kernels");
  }
  kernels::set_gemm_isa(isa);
  kernels::reload_route_cache();  // rates measured with other kernels are not these
}

// --json names a file to append to: checked before any step runs, by the rank that writes,
// and the whole job stops when it is refused.
void check_json_file(const std::string& path, const dist::Communicator& world) {
  together(world, [&] {
    if (path.empty() || !world.is_root()) return;
    try {
      bench::check_bench_records_file(path);
    } catch (const Error& e) {
      throw Error(std::string("--json: ") + e.what());
    }
  });
}

int run(BenchArgs a, const dist::Communicator& world) {
  choose_gemm_isa(a.gemm_isa);
  check_json_file(a.json, world);
  if (a.interleave) return run_interleaved(a, world);
  config::TrainerConfig c;
  together(world, [&] {
    if (a.precision.find(',') != std::string::npos) {
      throw Error("--precision: '" + a.precision +
                  "' lists several; one run takes one (or add --interleave)");
    }
    const std::optional<TrainingPrecision> precision =
        a.precision.empty() ? std::nullopt
                            : std::optional(parse_training_precision(a.precision, "--precision"));
    c = make_config(a, precision);
    if (world.is_root()) say_unused_by_float32(a, precision);
  });
  const bench::BenchResult r = bench::run_train_benchmark(
      c, a.options, [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); },
      bible_kjv_text, world);
  if (!world.is_root()) return 0;  // rank 0 reports for the job
  std::printf("%s\n%s", bench::format_bench_report(r).c_str(),
              kernels::route_table_text(r.routes).c_str());
  append_json(a.json, r);
  return 0;
}

}  // namespace

Action register_bench_command(CLI::App& app, const dist::Communicator& world) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (see docs/PERFORMANCE.md)");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "train", "Time training steps of a config: median throughput, GFLOP/s, MFU, peak RSS");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--config", a->config, "The YAML config (docs/config.md)")->required();
  cmd->add_option(
      "--precision", a->precision,
      training_precision_names() +
          " (default: the config's; float16 "
          "and cbfloat16 get dynamic loss scaling unless --loss-scaling says otherwise; "
          "fp8 (delayed scaling) to nvfp4: the linear layers' recipe, the rest in bfloat16). "
          "With --interleave, a comma-separated list");
  cmd->add_option("--opt-level", a->opt_level, "precision_opt_level 0 | 1 | 2 (default: config's)")
      ->check(decimal<int>());
  cmd->add_option("--loss-scaling", a->loss_scaling, "dynamic or a number (the loss scale)");
  cmd->add_option("--route", a->route,
                  "Matrix products: " + names_of(precision::kMatmulRouteNames) +
                      " (default: the config's "
                      "precision.matmul_route, automatic)");
  cmd->add_option(
      "--master-weights", a->master_weights,
      names_of(optim::kMasterWeightsNames) + " (default: the config's precision.master_weights)");
  cmd->add_option("--state-dtype", a->state_dtype,
                  "The optimizer's moments: " + names_of(optim::kStateFormatNames) +
                      " (default: the config's optimizer state_dtype)");
  cmd->add_option("--gemm-isa", a->gemm_isa,
                  "The fp32 route's GEMM micro-kernels: " + names_of(kernels::kGemmIsaNames) +
                      " (default: the best this CPU has; avx2 on an AVX-512 CPU times the code an "
                      "AVX2-only CPU runs)");
  cmd->add_option("--steps", a->options.steps, "Timed steps (default 10)")
      ->check(decimal<std::int64_t>());
  cmd->add_option("--warmup", a->options.warmup, "Untimed steps first (default 2)")
      ->check(decimal<std::int64_t>());
  cmd->add_flag("--profile", a->options.profile, "Print time per step by op class");
  cmd->add_flag("--interleave", a->interleave,
                "Run every --precision of the list in this process, step by step in turn, and "
                "print their throughput ratios (comparable on a noisy machine; no peak RSS; "
                "with --profile, one profile per run). For configs of a few GiB, run them alone: "
                "each run's memory idles between its steps, which some machines make slow to "
                "touch again");
  cmd->add_option("--json", a->json, "Append the results as one JSON line to this file");
  cmd->add_option("--set", a->overrides, "Override a config key: a.b.c=value (repeatable)");
  return [cmd, a, &world]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*a, world);
  };
}

}  // namespace mantissa::app
