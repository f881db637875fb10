// `mantissa compare`: one job trained in several formats, one after another (same seed, same
// batches), each in its own process, then the precision report of all of them.
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "child_process.hpp"
#include "commands.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"
#include "precision_overrides.hpp"
#include "report_output.hpp"

namespace mantissa::app {
namespace {

struct CompareArgs {
  std::string config, formats = "float32,bfloat16,float16,cbfloat16", out;
  std::optional<std::int64_t> steps;  // unset: the config's max_steps
  std::vector<std::string> overrides;
};

// The config overrides of one format's run: the user's, then the run directory, the step
// count and the format.
std::vector<std::string> run_overrides(const CompareArgs& a, const TrainingPrecision& format,
                                       const std::string& dir) {
  std::vector<std::string> o = a.overrides;
  o.push_back("trainer.init.checkpoint.dir=" + dir);
  if (a.steps) o.push_back("trainer.init.loop.max_steps=" + std::to_string(*a.steps));
  for (std::string& s : precision_overrides(format, "", -1, "")) o.push_back(std::move(s));
  return o;
}

int run(const CompareArgs& a) {
  if (a.steps && *a.steps < 1)
    throw Error("--steps: " + std::to_string(*a.steps) + " must be at least 1");
  const std::vector<TrainingPrecision> formats = parse_training_precisions(a.formats, "--formats");
  const std::string out =
      a.out.empty() ? "runs/compare-" + std::filesystem::path(a.config).stem().string() : a.out;
  std::vector<std::string> dirs;
  for (const TrainingPrecision& f : formats) {
    dirs.push_back((std::filesystem::path(out) / training_precision_name(f)).string());
    config::load_config(a.config, run_overrides(a, f, dirs.back()));  // every error before work
  }
  std::vector<std::string> drawn;
  std::string formats_text;
  int status = 0;
  for (std::size_t i = 0; i < formats.size(); ++i) {
    const std::string name = training_precision_name(formats[i]);
    formats_text += (i ? ", " : "") + std::string(name);
    fmt::print(stderr, "compare: {} ({} of {}), run directory {}\n", name, i + 1, formats.size(),
               dirs[i]);
    std::vector<std::string> args{"train", "--config", a.config, "--mode", "train_and_eval"};
    for (const std::string& o : run_overrides(a, formats[i], dirs[i])) {
      args.push_back("--set");
      args.push_back(o);
    }
    const ChildResult r = run_self(args);
    if (std::filesystem::exists(std::filesystem::path(dirs[i]) / "metrics.jsonl"))
      drawn.push_back(dirs[i]);
    if (r.exit_status != 0) {
      fmt::print(stderr, "compare: the {} run failed (exit status {})\n", name, r.exit_status);
      if (status == 0) status = r.exit_status;
    }
    if (r.interrupted) {
      fmt::print(stderr, "compare: interrupted; the report shows the runs so far\n");
      break;
    }
  }
  if (drawn.empty()) throw Error("compare: no run wrote metrics; there is nothing to report");
  const std::string report = (std::filesystem::path(out) / "report.html").string();
  report::ReportOptions options;
  options.subtitle = a.config + " in " + formats_text;
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
  cmd->add_option("--steps", a->steps, "Training steps per format (default: the config's)");
  cmd->add_option("--out", a->out,
                  "Directory for the runs (one per format) and report.html (default "
                  "runs/compare-<config name>)");
  cmd->add_option("--set", a->overrides,
                  "Override a config key in every run: a.b.c=value (repeatable)");
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*a);
  };
}

}  // namespace mantissa::app
