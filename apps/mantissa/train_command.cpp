// `mantissa train` and `mantissa eval`.
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "bible_corpus.hpp"
#include "commands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/names.hpp"
#include "mantissa/train/trainer.hpp"
#include "run_config.hpp"
#include "terminal_events.hpp"
#include "together.hpp"

namespace mantissa::app {
namespace {

// SIGINT, SIGTERM and SIGHUP (Ctrl-C; kill, systemd, docker, Slurm; a closed terminal or SSH
// session; mpirun forwards them to every process) ask the run to checkpoint at the next step
// boundary and stop (in a data-parallel job every process stops after the same step); a
// second one, of any of the three, ends the program at once (the first puts all three back to
// their default: a checkpoint being written then is lost, the previous one is not). SIGPIPE is
// ignored from the start of training on: a reader of the output that goes away (`| head`, a closed
// `| tee`) costs the printing, not the run.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int signo) {
  struct sigaction dfl {};  // sigaction is async-signal-safe
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s : kStopSignals) sigaction(s, &dfl, nullptr);
  g_signal.store(signo);
  g_stop.store(true);
}

class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kStopSignals) sigaddset(&sa.sa_mask, s);  // one handler runs at a time
    for (int s : kStopSignals) sigaction(s, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
  }
  ~StopSignals() {
    for (int s : kStopSignals) std::signal(s, SIG_DFL);
    // SIGPIPE stays ignored: the lines printed after the run go to nothing, and the exit
    // status still tells the run's outcome.
  }
};

struct TrainArgs {
  std::string config, mode, resume, resume_settings;
  std::vector<std::string> overrides;
};

// "%.4f" of a NaN prints its meaningless sign ("-nan"): a NaN is written "nan".
std::string fixed(double v, int digits) {
  return std::isnan(v) ? "nan" : fmt::format("{:.{}f}", v, digits);
}

void print_validation(const train::EvalResult& r, std::int64_t step) {
  std::printf("validation: loss %s, %s %s (%lld batches, step %lld)\n", fixed(r.loss, 4).c_str(),
              r.text ? "perplexity" : "accuracy",
              (r.text ? fixed(r.perplexity, 3) : fixed(r.accuracy, 4)).c_str(),
              static_cast<long long>(r.steps), static_cast<long long>(step));
}

// The --mode words a command takes: all of kRunModeNames (train), or only the modes that
// evaluate (eval: it never trains).
struct Modes {
  std::string fallback;
  bool evaluation_only = false;
  bool allows(train::RunMode m) const {
    return !evaluation_only || m == train::RunMode::eval || m == train::RunMode::eval_all;
  }
  std::string names() const {
    std::string out;
    for (const auto& [word, mode] : train::kRunModeNames) {
      if (allows(mode)) out += (out.empty() ? "" : ", ") + std::string(word);
    }
    return out;
  }
};

int run(const TrainArgs& a, const Modes& modes, const dist::Communicator& world) {
  train::RunMode mode{};
  config::TrainerConfig c;
  train::ResumeSettings settings = train::ResumeSettings::must_match;
  together(world, [&] {
    mode = parse_named(train::kRunModeNames, a.mode.empty() ? modes.fallback : a.mode, "--mode");
    if (!modes.allows(mode)) {
      throw Error("--mode: '" + a.mode + "' (expected one of: " + modes.names() +
                  "; `mantissa train` trains)");
    }
    if (mode == train::RunMode::eval_all && !a.resume.empty() && a.resume != "latest") {
      throw Error("--resume: '" + a.resume +
                  "' names one checkpoint, but --mode eval_all evaluates every checkpoint of the "
                  "run directory (drop --resume, or --mode eval for that one)");
    }
    if (!a.resume_settings.empty()) {
      if (a.resume.empty() && !modes.evaluation_only) {
        throw Error("--resume-settings: give it with --resume");
      }
      settings = parse_named(train::kResumeSettingsNames, a.resume_settings, "--resume-settings");
    }
    c = load_run_config(a.config, a.overrides);
  });
  // Training: from here on a stop signal is a request, honoured at the next step. Evaluation
  // writes no checkpoint: a signal ends it as usual.
  std::optional<StopSignals> signals;
  if (mode == train::RunMode::train || mode == train::RunMode::train_and_eval) signals.emplace();
  TerminalEvents events;
  train::Trainer trainer(c, {&events, bible_kjv_text, world, &g_stop, &g_signal});
  // eval_all reads every checkpoint; eval without --resume the latest.
  const train::ResumeFrom resume =
      a.resume.empty()
          ? (mode == train::RunMode::eval ? train::ResumeFrom::latest() : train::ResumeFrom{})
          : train::parse_resume(a.resume, "--resume");
  const train::RunSummary s = trainer.run(mode, resume, settings);
  // The job's signal (data parallel: the first rank's that caught one; every rank stopped
  // alike), SIGINT when none says (a stop asked some other way).
  const int signo = !s.interrupted ? 0 : (s.stop_signal != 0 ? s.stop_signal : SIGINT);
  if (!world.is_root()) return s.interrupted ? kExitInterrupted + signo : 0;
  for (const train::CheckpointEval& e : s.evals) print_validation(e.result, e.step);
  if (s.eval && s.evals.empty()) print_validation(*s.eval, s.global_step);
  if (!s.unusable.empty()) {  // eval_all: the others' results are printed above
    throw Error(fmt::format("eval_all: {} of {} checkpoints could not be evaluated; the first: {}",
                            s.unusable.size(), s.unusable.size() + s.evals.size(),
                            s.unusable.front().error));
  }
  if (!s.interrupted) return 0;
  // fputs: a reader of stderr that went away costs this line, not the exit status.
  std::fputs(fmt::format("mantissa: interrupted by {} at step {}: checkpoint {} written; resume "
                         "with --resume latest\n",
                         train::signal_name(signo), s.global_step, s.last_checkpoint)
                 .c_str(),
             stderr);
  return kExitInterrupted + signo;
}

Action add(CLI::App& app, const char* name, const char* help, const Modes& modes,
           const dist::Communicator& world) {
  auto* cmd = app.add_subcommand(name, help);
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config, "The YAML config (docs/config.md)")->required();
  cmd->add_option("--mode", args->mode, modes.names() + " (default " + modes.fallback + ")");
  cmd->add_option("--resume", args->resume,
                  "latest (the newest checkpoint in the run directory) or a checkpoint path");
  cmd->add_option("--set", args->overrides, "Override a config key: a.b.c=value (repeatable)");
  cmd->add_option("--resume-settings", args->resume_settings,
                  "When the resumed checkpoint's precision or optimizer differs from the "
                  "config's: " +
                      names_of(train::kResumeSettingsNames) +
                      " (which wins; without it the difference is an error)");
  return [cmd, args, modes, &world]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*args, modes, world);
  };
}

}  // namespace

Action register_train_command(CLI::App& app, const dist::Communicator& world) {
  return add(app, "train",
             "Train a model from a YAML config (under mpirun: data-parallel, "
             "docs/distributed.md)",
             Modes{"train_and_eval"}, world);
}

Action register_eval_command(CLI::App& app, const dist::Communicator& world) {
  return add(app, "eval",
             "Evaluate a checkpoint (default: the run's latest; --mode eval_all: every one) on "
             "the validation data",
             Modes{"eval", true}, world);
}

}  // namespace mantissa::app
