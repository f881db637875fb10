#include "mantissa/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data_parallel.hpp"
#include "fp8_layers.hpp"
#include "machine.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "mantissa/train/metrics.hpp"
#include "number_text.hpp"
#include "param_groups.hpp"
#include "run_settings.hpp"
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

}  // namespace

Trainer::Trainer(TrainerConfig config, TrainerHooks hooks)
    : config_(std::move(config)), events_(hooks.events != nullptr ? hooks.events : &silent_) {
  dp_ = std::make_unique<DataParallel>(hooks.world, config_.dist);
  if (!dp_->is_root()) events_ = &silent_;  // rank 0 reports for the job
  policy_ = config_.precision.policy();
  run_dir_ = config_.checkpoint.dir.empty() ? "runs/default" : config_.checkpoint.dir;
  for (const std::string& note : config_.notes) log(note);
  // Before any work: the global batch must split evenly (every process says so alike). Then
  // rank 0 first: it may write the dataset cache the others read. A failure on any process
  // stops every one here.
  tensor::BatchPart part;
  dp_->together([&] { part = dp_->batch_part(config_.train_data.batch_size); });
  dp_->root_first([&] {
    task_ = make_task(config_, hooks.kjv_corpus);
    task_->set_batch_part(part);
    fp8_ = std::make_unique<Fp8Layers>(task_->module(), policy_.fp8);
    optimizer_ =
        optim::make_optimizer(config_.optimizer.settings,
                              build_param_groups(config_, task_->module().named_parameters()));
    optimizer_->set_training_state(
        {config_.precision.master_weights, config_.optimizer.state_format, config_.seed});
    scaler_ = config_.precision.make_scaler([this](const std::string& l) { log(l); });
  });
  dp_->attach(task_->module().parameters());
}

Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) const {
  events_->message(line);
}

int Trainer::rank() const {
  return dp_->rank();
}
int Trainer::ranks() const {
  return dp_->size();
}
const dist::ReducerStats* Trainer::reducer_stats() const {
  return dp_->stats();
}

void Trainer::write_metrics(const std::string& json_line) const {
  if (!dp_->is_root()) return;
  const std::filesystem::path file = std::filesystem::path(run_dir_) / "metrics.jsonl";
  std::error_code ec;
  std::filesystem::create_directories(run_dir_, ec);
  std::ofstream f(file, std::ios::app);
  f << json_line << "\n";
  if (ec || !f) throw Error(file.string() + ": cannot append the metrics line");
}

std::map<std::string, tensor::Tensor> Trainer::state_tensors() const {
  std::map<std::string, tensor::Tensor> t = with_prefix(kModelPrefix, task_->module().state_dict());
  t.merge(with_prefix(kOptimizerPrefix, optimizer_->state_tensors()));
  t.merge(with_prefix(kFp8Prefix, fp8_->state_tensors()));
  return t;
}

std::map<std::string, std::string> Trainer::state_metadata() const {
  std::map<std::string, std::string> m;
  m["global_step"] = std::to_string(global_step_);
  m["optimizer_step"] = std::to_string(optimizer_->step_index());
  m["config"] = config_.yaml;
  m["fp16_type"] = policy_.enabled() ? std::string(numerics::name(policy_.half)) : "float32";
  const data::LoaderState ls = task_->loader_state();
  m["train_loader"] = json{{"epoch", ls.epoch}, {"position", ls.position}}.dump();
  const tensor::RngState rs = task_->rng_state();
  m["rng"] = json{{"seed", rs.seed}, {"counter", rs.counter}}.dump();
  if (scaler_) m["scaler"] = amp::encode_scaler_state(scaler_->state());
  m["dist_ranks"] = std::to_string(dp_->size());
  return m;
}

std::string Trainer::save_checkpoint_now() {
  std::string path;
  dp_->on_root([&] {  // every process holds the same state: rank 0 writes it
    path = save_checkpoint(run_dir_, global_step_, {state_tensors(), state_metadata()});
    apply_retention(run_dir_, config_.checkpoint.keep);
  });
  return dp_->from_root(path);
}

std::optional<std::string> Trainer::latest_of_job() const {
  std::string latest;  // rank 0's view of the run directory is the job's
  dp_->on_root([&] { latest = latest_checkpoint(run_dir_).value_or(""); });
  latest = dp_->from_root(latest);
  if (latest.empty()) return std::nullopt;
  return latest;
}

void Trainer::restore(const std::string& path) {
  std::int64_t written_by = 1;
  dp_->together([&] { written_by = restore_state(path); });
  // Every process read the same file: the same state, or an Error naming the one that differs
  // (a run directory that is not shared, a stale copy).
  dp_->require_identical_state(state_tensors(), state_metadata(),
                               "the state restored from " + path);
  log("resumed from " + path + " at step " + std::to_string(global_step_));
  if (written_by != dp_->size()) {
    log("the checkpoint was written by " + std::to_string(written_by) + " process" +
        (written_by == 1 ? "" : "es") + ", this run has " + std::to_string(dp_->size()) +
        ": the data carries on from the same sample (the global batch is unchanged); the "
        "steps are not bit-identical to a run that keeps its number of processes");
  }
}

std::int64_t Trainer::restore_state(const std::string& path) {
  const Checkpoint c = load_checkpoint(path);
  std::int64_t written_by = 1;
  try {
    task_->module().load_state_dict(under_prefix(kModelPrefix, c.tensors));
    optimizer_->load_state_tensors(under_prefix(kOptimizerPrefix, c.tensors),
                                   std::stoll(c.metadata.at("optimizer_step")));
    fp8_->load_state_tensors(under_prefix(kFp8Prefix, c.tensors));
    global_step_ = std::stoll(c.metadata.at("global_step"));
    const json ls = json::parse(c.metadata.at("train_loader"));
    task_->set_loader_state(
        {ls.at("epoch").get<std::int64_t>(), ls.at("position").get<std::int64_t>()});
    const json rs = json::parse(c.metadata.at("rng"));
    task_->set_rng_state(
        {rs.at("seed").get<std::uint64_t>(), rs.at("counter").get<std::uint64_t>()});
    if (scaler_) {
      if (c.metadata.count("scaler") == 0)
        throw Error("no loss-scaler state, but this run scales the loss");
      scaler_->load_state(amp::decode_scaler_state(c.metadata.at("scaler")));
    }
    policy_.half = numerics::parse_format(c.metadata.at("fp16_type")).value_or(policy_.half);
    if (c.metadata.count("dist_ranks") != 0) written_by = std::stoll(c.metadata.at("dist_ranks"));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  } catch (const std::exception& e) {  // missing metadata keys, malformed JSON
    throw Error(path + ": checkpoint metadata is malformed (" + e.what() + ")");
  }
  return written_by;
}

EvalResult Trainer::evaluate() {
  precision::Autocast cast(policy_);
  autograd::NoGradGuard no_grad;
  task_->module().eval();
  const EvalResult r = task_->evaluate(config_.loop.eval_steps);
  task_->module().train();
  EvalRecord record{global_step_, r.loss, std::nullopt, std::nullopt, r.steps};
  std::string line =
      "eval at step " + std::to_string(global_step_) + ": loss " + fmt_double(r.loss);
  if (r.perplexity > 0) {
    record.perplexity = r.perplexity;
    line += ", perplexity " + fmt_double(r.perplexity);
  } else {
    record.accuracy = r.accuracy;
    line += ", accuracy " + fmt_double(r.accuracy);
  }
  write_metrics(metrics_line(record));
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
    // Each micro-batch's loss weighted by its share of the step's: 1/accum, and 1/N with N
    // processes (each holds 1/N of the global batch), so every backward carries the gradients
    // one process would for these samples, with the same magnitudes (hence the same float16
    // overflow and underflow); the processes' shares are then summed.
    const std::int64_t shares = accum * dp_->size();
    for (std::int64_t a = 0; a < accum; ++a) {
      autograd::Variable loss = task_->next_train_loss();
      r.loss += loss.value().item() / static_cast<double>(accum);
      if (shares > 1) loss = autograd::scale(loss, 1.0f / static_cast<float>(shares));
      dp_->backward(scaler_ ? scaler_->scale(loss) : loss, a + 1 == accum);
    }
    // Data parallel: the gradients summed over the processes, the loss averaged; one decision on
    // skipping and one clipping norm for all (with one process: nothing changes).
    dp_->finish();
    r.loss = dp_->mean(r.loss);
    r.report = amp::finish_step(*optimizer_, scaler_.get(), config_.precision.max_gradient_norm,
                                config_.precision.max_gradient_value, dp_->step_agreement());
  }
  fp8_->update(dp_->fp8_agreement());  // data parallel: the scales follow the global batch
  if (scaler_) {
    if (auto wider = scaler_->take_fallback()) {
      policy_.half = *wider;
      log("precision falls back to " + std::string(numerics::name(*wider)) + " from here on");
    }
  }
  ++global_step_;
  if (!r.report.stepped) {
    std::string line = "skipped step " + std::to_string(global_step_) +
                       ": non-finite gradients at loss scale " +
                       detail::scale_text(r.report.loss_scale);
    for (std::size_t i = 0; i < r.report.nonfinite_params.size(); ++i)
      line += (i == 0 ? " in " : ", ") + r.report.nonfinite_params[i];
    log(line);
  }
  return r;
}

RunRecord Trainer::run_record() const {
  RunRecord r;
  r.format = policy_.half;
  r.fp8 = policy_.fp8.enabled;
  r.loss_scaling = detail::loss_scaling_mode(scaler_.get());
  r.model = name_of(kModelNames, config_.model.kind);
  r.parameters = parameter_count();
  r.unit = item_unit();
  r.items_per_step = items_per_step();
  r.start_step = global_step_;
  r.max_steps = config_.loop.max_steps;
  r.seed = config_.seed;
  r.cpu = detail::cpu_name();
  r.settings = detail::precision_settings(config_.precision, policy_, scaler_.get());
  r.settings.emplace_back("optimizer", optimizer_->name());
  if (config_.optimizer.state_format != numerics::Format::float32) {
    r.settings.emplace_back("optimizer state_dtype",
                            std::string(numerics::name(config_.optimizer.state_format)));
  }
  r.settings.emplace_back("learning rate", config_.schedule_text);
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

TrainingStateBytes Trainer::training_state_bytes() const {
  TrainingStateBytes b;
  for (const autograd::Variable& p : optimizer_->parameters()) {
    b.weights += p.value().numel() * p.value().element_bytes();
    if (p.grad().defined()) b.gradients += p.grad().numel() * p.grad().element_bytes();
    b.copies += p.cached_copy_bytes();
  }
  b.optimizer = optimizer_->state_bytes();
  return b;
}

RunSummary Trainer::evaluate_all() {
  const std::vector<std::string> all = list_checkpoints(run_dir_);
  if (all.empty())
    throw Error("eval_all: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  RunSummary summary;
  for (const std::string& path : all) {
    restore(path);
    summary.evals.push_back({path, global_step_, evaluate()});
  }
  summary.eval = summary.evals.back().result;
  summary.global_step = global_step_;
  return summary;
}

RunSummary Trainer::run(RunMode mode, const std::optional<std::string>& resume) {
  if (mode == RunMode::eval_all) return evaluate_all();
  if (resume) {
    const std::optional<std::string> path = *resume == "latest" ? latest_of_job() : resume;
    if (path) {
      restore(*path);
    } else if (mode == RunMode::eval) {
      throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
    } else {
      log("no checkpoint in " + run_dir_ + ": starting from step 0");
    }
  } else if (mode == RunMode::eval) {
    throw Error("eval: give --resume latest or a checkpoint path");
  }
  RunSummary summary;
  if (mode == RunMode::eval) {
    summary.eval = evaluate();
    summary.global_step = global_step_;
    return summary;
  }
  dp_->on_root([&] {
    if (const int n = remove_unfinished_checkpoints(run_dir_)) {
      log("deleted " + std::to_string(n) + " unfinished checkpoint file" + (n == 1 ? "" : "s") +
          " (*.tmp) in " + run_dir_ + ", left by a run stopped while it saved");
    }
  });
  log("training " + std::string(name_of(kModelNames, config_.model.kind)) + " (" +
      std::to_string(task_->module().parameter_count()) + " parameters), precision " +
      policy_.describe() + ", " + optimizer_->name() + ", lr " + config_.schedule_text +
      ", run directory " + run_dir_);
  write_metrics(metrics_line(run_record()));
  if (const dist::ReducerStats* st = dp_->stats()) {
    const std::int64_t global = config_.train_data.batch_size;
    log("data parallel over " + std::to_string(dp_->size()) +
        " processes: " + std::to_string(global / dp_->size()) + " of every global batch of " +
        std::to_string(global) + " each; gradients summed in " + std::to_string(st->buckets) +
        " bucket" + (st->buckets == 1 ? "" : "s") + " over a " +
        std::string(name_of(dist::kWireFormatNames, config_.dist.allreduce_dtype)) + " wire" +
        (config_.dist.overlap ? ", started during the backward" : ", after the backward"));
  }
  const std::int64_t eval_every =
      mode == RunMode::train_and_eval ? config_.loop.eval_interval() : 0;
  if (mode == RunMode::train_and_eval && eval_every == 0) {
    log("eval_frequency is 0: no validation while training");
  }
  auto window_start = Clock::now();
  const auto run_start = window_start;
  std::int64_t window_items = 0, start_step = global_step_;
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  std::int64_t saved_at = -1;  // the step the last periodic checkpoint holds
  while (global_step_ < config_.loop.max_steps) {
    if (dp_->any(stop_.load())) {  // every process stops after the same step
      summary.interrupted = true;
      break;
    }
    const auto [step_loss, report] = train_step();
    if (!report.stepped)
      write_metrics(
          metrics_line(SkipRecord{global_step_, report.loss_scale, report.nonfinite_params}));
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
      if (scaler_) p.loss_scale = report.loss_scale;
      p.learning_rate = optimizer_->current_learning_rate();
      p.grad_norm = report.grad_norm;
      p.skipped_steps = report.skipped_steps;
      p.items_per_second = static_cast<double>(window_items) / std::max(secs, 1e-9);
      p.unit = task_->unit();
      p.eta_seconds = elapsed / done * static_cast<double>(config_.loop.max_steps - global_step_);
      const std::optional<double> logged_scale =
          config_.precision.logs_loss_scale() ? p.loss_scale : std::nullopt;
      WindowRecord w{p.step,          p.loss,      p.learning_rate,    logged_scale,
                     p.skipped_steps, p.grad_norm, p.items_per_second, detail::peak_rss_mib(),
                     std::nullopt};
      if (!fp8_->empty()) w.fp8 = fp8_->take_window();
      write_metrics(metrics_line(w, p.unit));
      events_->progress(p);
      window_start = Clock::now();
      window_items = 0;
      loss_sum = 0;
      loss_count = 0;
    }
    const auto pause_start = Clock::now();
    if (eval_every > 0 && global_step_ % eval_every == 0 && global_step_ < config_.loop.max_steps) {
      events_->evaluating(global_step_);
      summary.eval = evaluate();
    }
    if (config_.checkpoint.steps > 0 && global_step_ % config_.checkpoint.steps == 0) {
      summary.last_checkpoint = save_checkpoint_now();
      saved_at = global_step_;
    }
    window_start += Clock::now() - pause_start;  // throughput counts training time only
  }
  if (saved_at != global_step_) summary.last_checkpoint = save_checkpoint_now();
  log("checkpoint " + summary.last_checkpoint + (summary.interrupted ? " (interrupted)" : ""));
  if (eval_every > 0 && !summary.interrupted) {
    events_->evaluating(global_step_);
    summary.eval = evaluate();
  }
  summary.global_step = global_step_;
  summary.skipped_steps = scaler_ ? scaler_->num_skipped_steps() : 0;
  return summary;
}

}  // namespace mantissa::train
