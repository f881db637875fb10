// `mantissa train` and `mantissa eval`.
#include <csignal>
#include <filesystem>

#include "bible_corpus.hpp"
#include "commands.hpp"
#include "mantissa/names.hpp"
#include "mantissa/train/trainer.hpp"
#include "terminal_events.hpp"
#include "together.hpp"

namespace mantissa::app {
namespace {

// Ctrl-C (SIGINT) and SIGTERM (what mpirun sends every process when it gets either): the run
// checkpoints at the next step and returns; in a data-parallel job every process stops after
// the same step.
train::Trainer* g_running = nullptr;
extern "C" void on_stop_signal(int) {
  if (g_running != nullptr) g_running->request_stop();
}
constexpr int kStopSignals[] = {SIGINT, SIGTERM};

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

int run(const TrainArgs& a, const std::string& default_mode, const dist::Communicator& world) {
  train::RunMode mode{};
  train::TrainerConfig c;
  together(world, [&] {
    mode = parse_named(train::kRunModeNames, a.mode.empty() ? default_mode : a.mode, "--mode");
    c = train::load_config(a.config, a.overrides);
  });
  if (c.checkpoint.dir.empty()) {
    c.checkpoint.dir = "runs/" + std::filesystem::path(a.config).stem().string();
  }
  TerminalEvents events;
  train::Trainer trainer(c, {&events, bible_kjv_text, world});
  g_running = &trainer;
  for (int s : kStopSignals) std::signal(s, on_stop_signal);
  const std::optional<std::string> resume =
      a.resume.empty()
          ? (mode == train::RunMode::eval ? std::optional<std::string>("latest") : std::nullopt)
          : std::optional<std::string>(a.resume);  // eval_all reads every checkpoint
  const train::RunSummary s = trainer.run(mode, resume);
  g_running = nullptr;
  for (int sig : kStopSignals) std::signal(sig, SIG_DFL);
  if (!world.is_root()) return 0;  // rank 0 reports for the job
  for (const train::CheckpointEval& e : s.evals) print_validation(e.result, e.step);
  if (s.eval && s.evals.empty()) print_validation(*s.eval, s.global_step);
  if (s.interrupted)
    std::printf("interrupted at step %lld; resume with --resume latest\n",
                static_cast<long long>(s.global_step));
  return 0;
}

Action add(CLI::App& app, const char* name, const char* help, const std::string& default_mode,
           const dist::Communicator& world) {
  auto* cmd = app.add_subcommand(name, help);
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config, "The YAML config (docs/config.md)")->required();
  cmd->add_option("--mode", args->mode,
                  names_of(train::kRunModeNames) + " (default " + default_mode + ")");
  cmd->add_option("--resume", args->resume,
                  "latest (the newest checkpoint in the run directory) or a checkpoint path");
  cmd->add_option("--set", args->overrides, "Override a config key: a.b.c=value (repeatable)");
  return [cmd, args, default_mode, &world]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*args, default_mode, world);
  };
}

}  // namespace

Action register_train_command(CLI::App& app, const dist::Communicator& world) {
  return add(app, "train",
             "Train a model from a YAML config (under mpirun: data-parallel, "
             "docs/distributed.md)",
             "train_and_eval", world);
}

Action register_eval_command(CLI::App& app, const dist::Communicator& world) {
  return add(app, "eval",
             "Evaluate a checkpoint (default: the run's latest; --mode eval_all: every one) on "
             "the validation data",
             "eval", world);
}

}  // namespace mantissa::app
