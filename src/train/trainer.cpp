#include "mantissa/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "param_groups.hpp"
#include "run_dir.hpp"
#include "task.hpp"

namespace mantissa::train {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string fmt_double(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

bool evaluates(RunMode mode) {
  return mode != RunMode::train;
}

}  // namespace

Trainer::Trainer(TrainerConfig config, TrainerHooks hooks)
    : config_(std::move(config)),
      events_(hooks.events != nullptr ? hooks.events : &silent_),
      external_stop_(hooks.stop) {
  run_dir_ = config_.checkpoint.dir.empty() ? "runs/default" : config_.checkpoint.dir;
  for (const std::string& note : config_.notes) log(note);
  task_ = make_task(config_, hooks.kjv_corpus);
  build_optimizer_and_scaler();
  metrics_ =
      std::make_unique<MetricsFile>((std::filesystem::path(run_dir_) / "metrics.jsonl").string());
}

Trainer::~Trainer() = default;

void Trainer::build_optimizer_and_scaler() {
  optimizer_ = optim::make_optimizer(
      config_.optimizer.settings, build_param_groups(config_, task_->module().named_parameters()));
  scaler_ = config_.precision.make_step_guard([this](const std::string& l) { log(l); });
  policy_ = config_.precision.policy();
}

void Trainer::log(const std::string& line) const {
  events_->message(line);
}

void Trainer::write_metrics(const std::string& json_line) {
  metrics_->append(json_line);
}

bool Trainer::stop_requested() const {
  return stop_.load() || (external_stop_ != nullptr && external_stop_->load());
}

std::map<std::string, tensor::Tensor> Trainer::state_tensors() const {
  std::map<std::string, tensor::Tensor> t = with_prefix(kModelPrefix, task_->module().state_dict());
  t.merge(with_prefix(kOptimizerPrefix, optimizer_->state_tensors()));
  return t;
}

std::map<std::string, std::string> Trainer::state_metadata() const {
  CheckpointMeta m;
  m.global_step = global_step_;
  m.optimizer_step = optimizer_->step_index();
  m.config = config_.yaml;
  m.fp16_type = policy_.enabled() ? policy_.half : numerics::Format::float32;
  m.train_loader = task_->loader_state();
  m.rng = task_->rng_state();
  m.scaler = scaler_->state();
  return encode_checkpoint_meta(m);
}

std::string Trainer::save_checkpoint_now() {
  const std::string path =
      save_checkpoint(run_dir_, global_step_, {state_tensors(), state_metadata()});
  apply_retention(run_dir_, config_.checkpoint.keep);
  return path;
}

EvalResult Trainer::evaluate() {
  precision::Autocast cast(policy_);
  autograd::NoGradGuard no_grad;
  task_->module().eval();
  const EvalResult r = task_->evaluate(config_.loop.eval_steps);
  task_->module().train();
  json j{{"eval_step", global_step_}, {"loss", r.loss}, {"steps", r.steps}};
  std::string line =
      "eval at step " + std::to_string(global_step_) + ": loss " + fmt_double(r.loss);
  if (r.text) {
    j["perplexity"] = r.perplexity;
    line += ", perplexity " + fmt_double(r.perplexity);
  } else {
    j["accuracy"] = r.accuracy;
    line += ", accuracy " + fmt_double(r.accuracy);
  }
  write_metrics(j.dump());
  log(line);
  events_->evaluated(r, global_step_);
  return r;
}

StepResult Trainer::train_step() {
  const std::int64_t accum = config_.loop.grad_accum_steps;
  StepResult r;
  task_->module().train();  // dropout on
  {
    precision::Autocast cast(policy_);
    for (std::int64_t a = 0; a < accum; ++a) {
      autograd::Variable loss = task_->next_train_loss();
      r.loss += loss.value().item() / static_cast<double>(accum);
      if (accum > 1) loss = autograd::scale(loss, 1.0f / static_cast<float>(accum));
      autograd::backward(scaler_->scale(loss));
    }
    if (!std::isfinite(r.loss)) scaler_->note_nonfinite_loss();
    r.report = amp::finish_step(*optimizer_, scaler_.get(), config_.precision.max_gradient_norm,
                                config_.precision.max_gradient_value);
  }
  if (auto wider = scaler_->take_fallback()) {
    policy_.half = *wider;
    log("precision falls back to " + std::string(numerics::name(*wider)) + " from here on");
  }
  ++global_step_;
  return r;
}

std::int64_t Trainer::items_per_step() const {
  return task_->items_per_batch() * config_.loop.grad_accum_steps;
}
const char* Trainer::item_unit() const {
  return task_->unit();
}
std::int64_t Trainer::parameter_count() const {
  return task_->module().parameter_count();
}

RunSummary Trainer::evaluate_all() {
  const std::vector<std::string> all = list_checkpoints(run_dir_);
  if (all.empty())
    throw Error("eval_all: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  const RunDirLock lock(run_dir_, RunDirLock::Use::evaluate);
  metrics_->open();
  task_->prepare_evaluation();
  RunSummary summary;
  for (const std::string& path : all) {
    restore(path, load_checkpoint(path), false, ResumeSettings::must_match);
    summary.evals.push_back({path, global_step_, evaluate()});
  }
  summary.eval = summary.evals.back().result;
  summary.global_step = global_step_;
  return summary;
}

RunSummary Trainer::run(RunMode mode, const std::optional<std::string>& resume,
                        ResumeSettings settings) {
  if (mode == RunMode::eval_all) return evaluate_all();
  const bool training = mode != RunMode::eval;
  if (!training && !resume) throw Error("eval: give --resume latest or a checkpoint path");
  if (!training && !std::filesystem::is_directory(run_dir_) && resume == "latest") {
    throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  }
  // Before the first step: the run directory (locked, writable), the checkpoint, which
  // checkpoints the run may replace, the metrics file, the validation data, the schedules.
  const RunDirLock lock(run_dir_, training ? RunDirLock::Use::train : RunDirLock::Use::evaluate);
  std::optional<LoadedCheckpoint> loaded;
  if (resume == "latest") {
    loaded = load_latest_checkpoint(run_dir_);
  } else if (resume) {
    loaded = LoadedCheckpoint{*resume, load_checkpoint(*resume)};
  }
  if (!loaded && !training) {
    throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  }
  if (training) {
    check_checkpoints_are_ours(run_dir_,
                               loaded ? std::optional<std::string>(loaded->path) : std::nullopt);
  }
  if (loaded) {
    restore(loaded->path, loaded->checkpoint, training, settings);
  } else if (resume) {
    log("no checkpoint in " + run_dir_ + ": starting from step 0");
  }
  metrics_->open();
  if (evaluates(mode)) task_->prepare_evaluation();
  if (!training) {
    RunSummary summary;
    summary.eval = evaluate();
    summary.global_step = global_step_;
    return summary;
  }
  optimizer_->check_schedules(config_.loop.max_steps);
  return train_loop(mode);
}

RunSummary Trainer::train_loop(RunMode mode) {
  log("training " + std::string(name_of(kModelNames, config_.model.kind)) + " (" +
      std::to_string(task_->module().parameter_count()) + " parameters), precision " +
      policy_.describe() + ", " + optimizer_->name() + ", lr " + config_.schedule_text +
      ", run directory " + run_dir_);
  const std::int64_t eval_every =
      mode == RunMode::train_and_eval ? config_.loop.eval_interval() : 0;
  if (mode == RunMode::train_and_eval && eval_every == 0) {
    log("eval_frequency is 0: no validation while training");
  }
  RunSummary summary;
  std::int64_t saved_at = -1;  // the step the last periodic checkpoint holds
  try {
    train_steps(summary, eval_every, saved_at);
  } catch (const MetricsWriteError& e) {
    // A metrics record that cannot be written stops the run, after a checkpoint of the state
    // the last completed step left: nothing is lost silently, and the run resumes from there.
    std::string saved;
    try {
      saved = "; checkpoint " + save_checkpoint_now() +
              " written: resume with --resume latest once the file can be written";
    } catch (const Error& again) {
      saved = std::string("; the checkpoint could not be written either: ") + again.what();
    }
    throw Error(e.what() + saved);
  }
  if (saved_at != global_step_) summary.last_checkpoint = save_checkpoint_now();
  log("checkpoint " + summary.last_checkpoint + (summary.interrupted ? " (interrupted)" : ""));
  if (eval_every > 0 && !summary.interrupted) {
    events_->evaluating(global_step_);
    summary.eval = evaluate();
  }
  summary.global_step = global_step_;
  summary.skipped_steps = scaler_->num_skipped_steps();
  return summary;
}

void Trainer::train_steps(RunSummary& summary, std::int64_t eval_every, std::int64_t& saved_at) {
  auto window_start = Clock::now();
  const auto run_start = window_start;
  std::int64_t window_items = 0, start_step = global_step_;
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  while (global_step_ < config_.loop.max_steps) {
    if (stop_requested()) {
      summary.interrupted = true;
      break;
    }
    const auto [step_loss, report] = train_step();
    window_items += items_per_step();
    loss_sum += step_loss;
    ++loss_count;
    summary.last_loss = step_loss;
    const bool log_now =
        global_step_ % config_.logging.log_steps == 0 || global_step_ == config_.loop.max_steps;
    if (log_now) {
      const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double done = static_cast<double>(global_step_ - start_step);
      const double elapsed = std::chrono::duration<double>(Clock::now() - run_start).count();
      Progress p;
      p.step = global_step_;
      p.max_steps = config_.loop.max_steps;
      p.loss = loss_sum / static_cast<double>(loss_count);
      p.loss_scale = report.loss_scale;
      p.learning_rate = optimizer_->current_learning_rate();
      p.grad_norm = report.grad_norm;
      p.skipped_steps = report.skipped_steps;
      p.items_per_second = static_cast<double>(window_items) / std::max(secs, 1e-9);
      p.unit = task_->unit();
      p.eta_seconds = elapsed / done * static_cast<double>(config_.loop.max_steps - global_step_);
      json j{{"step", p.step},           {"loss", p.loss},
             {"lr", p.learning_rate},    {"skipped_steps", p.skipped_steps},
             {"grad_norm", p.grad_norm}, {std::string(p.unit) + "_per_s", p.items_per_second}};
      if (config_.precision.logs_loss_scale()) j["loss_scale"] = p.loss_scale;
      write_metrics(j.dump());
      events_->progress(p);
      window_start = Clock::now();
      window_items = 0;
      loss_sum = 0;
      loss_count = 0;
    }
    if (eval_every > 0 && global_step_ % eval_every == 0 && global_step_ < config_.loop.max_steps) {
      events_->evaluating(global_step_);
      summary.eval = evaluate();
    }
    if (config_.checkpoint.steps > 0 && global_step_ % config_.checkpoint.steps == 0) {
      summary.last_checkpoint = save_checkpoint_now();
      saved_at = global_step_;
    }
  }
}

}  // namespace mantissa::train
