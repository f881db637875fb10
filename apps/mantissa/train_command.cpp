// `mantissa train` and `mantissa eval`.
#include <csignal>
#include <filesystem>

#include "bible_corpus.hpp"
#include "commands.hpp"
#include "mantissa/names.hpp"
#include "mantissa/train/trainer.hpp"
#include "terminal_events.hpp"

namespace mantissa::app {
namespace {

train::Trainer* g_running = nullptr;
extern "C" void on_sigint(int) {
  if (g_running != nullptr) g_running->request_stop();
}

struct TrainArgs {
  std::string config, mode, resume;
  std::vector<std::string> overrides;
};

void print_validation(const train::EvalResult& r, std::int64_t step) {
  if (r.perplexity > 0) {
    std::printf("validation: loss %.4f, perplexity %.3f (%lld batches, step %lld)\n", r.loss,
                r.perplexity, static_cast<long long>(r.steps), static_cast<long long>(step));
  } else {
    std::printf("validation: loss %.4f, accuracy %.4f (%lld batches, step %lld)\n", r.loss,
                r.accuracy, static_cast<long long>(r.steps), static_cast<long long>(step));
  }
}

int run(const TrainArgs& a, const std::string& default_mode) {
  const train::RunMode mode =
      parse_named(train::kRunModeNames, a.mode.empty() ? default_mode : a.mode, "--mode");
  train::TrainerConfig c = train::load_config(a.config, a.overrides);
  if (c.checkpoint.dir.empty()) {
    c.checkpoint.dir = "runs/" + std::filesystem::path(a.config).stem().string();
  }
  TerminalEvents events;
  train::Trainer trainer(c, {&events, bible_kjv_text});
  g_running = &trainer;
  std::signal(SIGINT, on_sigint);  // Ctrl-C: checkpoint at the next step, then exit
  const std::optional<std::string> resume =
      a.resume.empty()
          ? (mode == train::RunMode::eval ? std::optional<std::string>("latest") : std::nullopt)
          : std::optional<std::string>(a.resume);  // eval_all reads every checkpoint
  const train::RunSummary s = trainer.run(mode, resume);
  g_running = nullptr;
  std::signal(SIGINT, SIG_DFL);
  for (const train::CheckpointEval& e : s.evals) print_validation(e.result, e.step);
  if (s.eval && s.evals.empty()) print_validation(*s.eval, s.global_step);
  if (s.interrupted)
    std::printf("interrupted at step %lld; resume with --resume latest\n",
                static_cast<long long>(s.global_step));
  return 0;
}

Action add(CLI::App& app, const char* name, const char* help, const std::string& default_mode) {
  auto* cmd = app.add_subcommand(name, help);
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config, "The YAML config (docs/config.md)")->required();
  cmd->add_option("--mode", args->mode,
                  names_of(train::kRunModeNames) + " (default " + default_mode + ")");
  cmd->add_option("--resume", args->resume,
                  "latest (the newest checkpoint in the run directory) or a checkpoint path");
  cmd->add_option("--set", args->overrides, "Override a config key: a.b.c=value (repeatable)");
  return [cmd, args, default_mode]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*args, default_mode);
  };
}

}  // namespace

Action register_train_command(CLI::App& app) {
  return add(app, "train", "Train a model from a YAML config", "train_and_eval");
}

Action register_eval_command(CLI::App& app) {
  return add(app, "eval",
             "Evaluate a checkpoint (default: the run's latest; --mode eval_all: every one) on "
             "the validation data",
             "eval");
}

}  // namespace mantissa::app
