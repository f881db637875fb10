#pragma once
// The Trainer: builds the model, data, optimizer, schedule and loss scaler from a
// TrainerConfig and runs train, eval or train_and_eval in the seeds' order (forward, scaled
// backward, unscale, clip, step or skip, update scale, zero grads; the schedule advances on
// taken steps), with gradient accumulation, periodic evaluation, metrics as JSON lines,
// progress lines, and atomic checkpoints that resume bit for bit.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/train/config.hpp"

namespace mantissa::train {

struct EvalResult {
  double loss = 0;        // mean of the per-step losses
  double perplexity = 0;  // text: exp(sum of token losses / tokens)
  double accuracy = 0;    // images
  std::int64_t steps = 0;
};

struct RunSummary {
  std::int64_t global_step = 0;
  std::int64_t skipped_steps = 0;
  double last_loss = 0;
  std::optional<EvalResult> eval;
  std::string last_checkpoint;
  bool interrupted = false;
};

// One optimizer step of train_step().
struct StepResult {
  double loss = 0;  // mean over the micro-batches
  amp::StepReport report;
};

class Task;  // the model + data pairing (text or images)

class Trainer {
 public:
  // `out` receives progress and log lines (default: stderr).
  explicit Trainer(TrainerConfig config, std::function<void(const std::string&)> out = {});
  ~Trainer();

  // mode: train | eval | train_and_eval. resume: "latest" (the newest checkpoint in the run
  // directory, if any) or a checkpoint path.
  RunSummary run(const std::string& mode, const std::optional<std::string>& resume = std::nullopt);
  EvalResult evaluate();
  // One training step: grad_accum_steps micro-batches (forward, scaled backward), then
  // unscale, clip, step or skip, update the scale. Advances the global step. run() is a loop
  // of these; benchmarks time them one by one.
  StepResult train_step();
  std::int64_t global_step() const { return global_step_; }
  std::int64_t items_per_step() const;  // tokens or samples per step
  const char* item_unit() const;        // "tokens" or "samples"
  std::int64_t parameter_count() const;
  const precision::Policy& policy() const { return policy_; }
  // Asks a running run() to checkpoint and return at the next step boundary (Ctrl-C).
  void request_stop() { stop_.store(true); }

  // Checkpoint contents now (the tests compare them bit for bit).
  std::map<std::string, tensor::Tensor> state_tensors() const;
  std::map<std::string, std::string> state_metadata() const;
  std::string run_dir() const { return run_dir_; }
  std::string save_checkpoint_now();

 private:
  void restore(const std::string& path);
  void log(const std::string& line) const;
  void write_metrics(const std::string& json_line) const;

  TrainerConfig config_;
  std::function<void(const std::string&)> out_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<amp::GradScaler> scaler_;
  precision::Policy policy_;
  std::int64_t global_step_ = 0;
  std::string run_dir_;
  std::atomic<bool> stop_{false};
};

}  // namespace mantissa::train
