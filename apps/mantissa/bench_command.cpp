// `mantissa bench train`: training throughput of a config (train/benchmark.hpp).
#include <fstream>

#include "bible_corpus.hpp"
#include "commands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/benchmark.hpp"
#include "precision_overrides.hpp"
#include "together.hpp"

namespace mantissa::app {
namespace {

struct BenchArgs {
  std::string config, precision, loss_scaling, route, json, master_weights, state_dtype;
  int opt_level = -1;
  std::vector<std::string> overrides;
  train::BenchOptions options;
};

int run(BenchArgs a, const dist::Communicator& world) {
  train::TrainerConfig c;
  together(world, [&] {
    const std::optional<TrainingPrecision> precision =
        a.precision.empty() ? std::nullopt
                            : std::optional(parse_training_precision(a.precision, "--precision"));
    // --precision and friends become config overrides, applied after the user's --set.
    for (const std::string& s :
         precision_overrides(precision, a.loss_scaling, a.opt_level, a.route))
      a.overrides.push_back(s);
    if (!a.master_weights.empty()) {
      a.overrides.push_back("trainer.init.precision.master_weights=" + a.master_weights);
    }
    c = train::load_config(a.config, a.overrides);
    if (!a.state_dtype.empty()) {
      const std::optional<numerics::Format> f = numerics::parse_format(a.state_dtype);
      if (f != numerics::Format::float32 && f != numerics::Format::bfloat16) {
        throw Error("--state-dtype: '" + a.state_dtype + "' (expected float32 or bfloat16)");
      }
      c.optimizer.state_format = *f;
    }
  });
  const train::BenchResult r = train::run_train_benchmark(
      c, a.options, [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); },
      bible_kjv_text, world);
  if (!world.is_root()) return 0;  // rank 0 reports for the job
  std::printf("%s", train::format_bench_report(r).c_str());
  if (!a.json.empty()) {
    std::ofstream f(a.json, std::ios::app);
    if (!f) throw Error("--json: cannot open '" + a.json + "' for appending");
    f << train::bench_result_json(r) << "\n";
  }
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
  cmd->add_option("--precision", a->precision,
                  "float32 | bfloat16 | float16 | cbfloat16 | fp8 (default: the config's; float16 "
                  "and cbfloat16 get dynamic loss scaling unless --loss-scaling says otherwise; "
                  "fp8: fp8 linear layers, the rest in bfloat16)");
  cmd->add_option("--opt-level", a->opt_level, "precision_opt_level 0 | 1 | 2 (default: config's)");
  cmd->add_option("--loss-scaling", a->loss_scaling, "dynamic or a number (the loss scale)");
  cmd->add_option("--route", a->route,
                  "Matrix products: automatic | fp32 | native_bf16 (default: the config's "
                  "precision.matmul_route, automatic)");
  cmd->add_option("--master-weights", a->master_weights,
                  "float32 | bfloat16 | bfloat16_stochastic | bfloat16_kahan (default: the "
                  "config's precision.master_weights)");
  cmd->add_option("--state-dtype", a->state_dtype,
                  "The optimizer's moments: float32 | bfloat16 (default: the config's "
                  "optimizer state_dtype)");
  cmd->add_option("--steps", a->options.steps, "Timed steps (default 10)");
  cmd->add_option("--warmup", a->options.warmup, "Untimed steps first (default 2)");
  cmd->add_flag("--profile", a->options.profile, "Print time per step by op class");
  cmd->add_option("--json", a->json, "Append the results as one JSON line to this file");
  cmd->add_option("--set", a->overrides, "Override a config key: a.b.c=value (repeatable)");
  return [cmd, a, &world]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*a, world);
  };
}

}  // namespace mantissa::app
