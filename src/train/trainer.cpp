#include "mantissa/train/trainer.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "data_parallel.hpp"
#include "digest.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/layers.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "param_groups.hpp"
#include "run_dir.hpp"
#include "run_outcome.hpp"
#include "run_settings.hpp"
#include "support/machine.hpp"
#include "support/number_text.hpp"
#include "task.hpp"

namespace mantissa::train {
namespace {

std::string fmt_double(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

bool evaluates(RunMode mode) {
  return mode != RunMode::train;
}

}  // namespace

Trainer::Trainer(config::TrainerConfig config, TrainerHooks hooks)
    : config_(std::move(config)),
      events_(hooks.events != nullptr ? hooks.events : &silent_),
      external_stop_(hooks.stop),
      stop_signal_(hooks.stop_signal) {
  dp_ = std::make_unique<DataParallel>(hooks.world, config_.dist);
  if (!dp_->is_root()) events_ = &silent_;  // rank 0 reports for the job
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
    // Items per step (records, throughput) in range before the first step.
    std::int64_t items = 0;
    if (__builtin_mul_overflow(task_->items_per_batch(), config_.loop.grad_accum_steps, &items)) {
      throw Error(
          "trainer.init.loop.grad_accum_steps: " + std::to_string(config_.loop.grad_accum_steps) +
          " micro-batches of " + std::to_string(task_->items_per_batch()) +
          " items overflow a 64-bit count of items per step");
    }
    attach_recipes();
    build_optimizer_and_scaler();
  });
  // Every process runs the same config (after --set) on the same data, or none starts: a
  // mismatch names the first rank that differs from rank 0.
  dp_->require_identical_digest(
      [&] {
        detail::Digest d;
        d.add(config_.yaml.data(), config_.yaml.size());
        return d.value();
      }(),
      "the config (after --set)");
  dp_->require_identical_digest(task_->data_digest(), "the training and validation data");
  dp_->attach(task_->module().parameters());
  metrics_ =
      std::make_unique<MetricsFile>((std::filesystem::path(run_dir_) / "metrics.jsonl").string());
}

Trainer::~Trainer() = default;

void Trainer::attach_recipes() {
  const std::optional<precision::RecipeSettings> recipe = config_.precision.linear_recipe();
  if (!recipe) {
    // (Attached again when a checkpoint's precision wins: an earlier recipe comes off.)
    for (const auto& [name, linear] : nn::linear_layers(task_->module())) linear->quant.reset();
    quant_ = std::make_unique<amp::QuantizedLayers>();
    return;
  }
  try {
    // Stochastic rounding draws from its own stream, seeded from the run's seed.
    quant_ = std::make_unique<amp::QuantizedLayers>(task_->module(), *recipe,
                                                    config_.seed ^ 0x6e76667034726e67ull);
  } catch (const Error& e) {
    throw Error("trainer.init.precision." + std::string(e.what()));
  }
}

std::string Trainer::precision_text() const {
  precision::Policy p = policy_;
  p.fp8.enabled = false;
  std::string s = p.describe();
  if (const std::optional<precision::RecipeSettings> r = config_.precision.linear_recipe()) {
    s += r->recipe == precision::Recipe::delayed
             ? ", fp8 linear layers (" +
                   std::string(name_of(precision::kFp8RecipeNames, r->fp8_formats)) + ")"
             : ", " + std::string(name_of(precision::kRecipeShortNames, r->recipe)) +
                   " linear layers";
  }
  return s;
}

void Trainer::build_optimizer_and_scaler() {
  optimizer_ = optim::make_optimizer(
      config_.optimizer.settings, build_param_groups(config_, task_->module().named_parameters()));
  optimizer_->set_training_state(
      {config_.precision.master_weights, config_.optimizer.state_format, config_.seed});
  scaler_ = config_.precision.make_step_guard([this](const std::string& l) { log(l); });
  scales_loss_ = config_.precision.scales_loss();
  policy_ = config_.precision.policy();
}

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

void Trainer::write_metrics(const std::string& json_line) {
  if (dp_->is_root()) metrics_->append(json_line);  // rank 0 writes for the job
}

bool Trainer::stop_requested() const {
  return stop_.load() || (external_stop_ != nullptr && external_stop_->load());
}

std::map<std::string, tensor::Tensor> Trainer::state_tensors() const {
  std::map<std::string, tensor::Tensor> t = with_prefix(kModelPrefix, task_->module().state_dict());
  t.merge(with_prefix(kOptimizerPrefix, optimizer_->state_tensors()));
  t.merge(with_prefix(amp::kFp8Prefix, quant_->state_tensors()));
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
  m.dist_ranks = dp_->size();
  m.routes = kernels::route_records();
  if (quant_->rounds_stochastically()) {
    m.stochastic_position = static_cast<std::int64_t>(quant_->stochastic_position());
  }
  return encode_checkpoint_meta(m);
}

std::string Trainer::save_checkpoint_now() {
  std::string path;
  dp_->on_root([&] {  // every process holds the same state: rank 0 writes it
    const std::map<std::string, tensor::Tensor> tensors = state_tensors();
    path = save_checkpoint(run_dir_, global_step_, {tensors, state_metadata()});
    if (all_finite(tensors)) {
      last_finite_checkpoint_ = path;
    } else {
      log("checkpoint " + path + " holds non-finite values" +
          (last_finite_checkpoint_.empty()
               ? std::string()
               : "; " + last_finite_checkpoint_ + ", the last finite one, is kept"));
    }
    apply_retention(run_dir_, config_.checkpoint.keep, last_finite_checkpoint_);
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

EvalResult Trainer::evaluate() {
  precision::Autocast cast(policy_);
  autograd::NoGradGuard no_grad;
  task_->module().eval();
  const EvalResult r = task_->evaluate(config_.loop.eval_steps);
  task_->module().train();
  report::EvalRecord record{global_step_, r.loss, std::nullopt, std::nullopt, r.steps};
  std::string line =
      "eval at step " + std::to_string(global_step_) + ": loss " + fmt_double(r.loss);
  if (r.text) {
    record.perplexity = r.perplexity;
    line += ", perplexity " + fmt_double(r.perplexity);
  } else {
    record.accuracy = r.accuracy;
    line += ", accuracy " + fmt_double(r.accuracy);
  }
  if (records_evals_) write_metrics(report::metrics_line(record));
  log(line);
  events_->evaluated(r, global_step_);
  return r;
}

StepResult Trainer::train_step() {
  const std::int64_t accum = config_.loop.grad_accum_steps;
  StepResult r;
  task_->module().train();  // dropout on
  // A sampled step measures what every rounding loses (rank 0, on its part of the batch: it
  // writes the record).
  std::optional<precision::QuantProbe> probe;
  if (dp_->is_root() && config_.logging.samples_precision(global_step_ + 1)) probe.emplace();
  {
    precision::Autocast cast(policy_);
    const precision::ProbeScope probing(probe ? &*probe : nullptr);
    std::optional<autograd::NonfiniteWatch> watch;  // names where a skipped step went non-finite
    if (config_.logging.attribute_overflows) watch.emplace();
    // Each micro-batch's loss weighted by its share of the step's: 1/accum, and 1/N with N
    // processes (each holds 1/N of the global batch), so every backward carries the gradients
    // one process would for these samples, with the same magnitudes (hence the same float16
    // overflow and underflow); the processes' shares are then summed.
    const std::int64_t shares = accum * dp_->size();
    for (std::int64_t a = 0; a < accum; ++a) {
      autograd::Variable loss = task_->next_train_loss();
      r.loss += loss.value().item() / static_cast<double>(accum);
      if (shares > 1) loss = autograd::scale(loss, 1.0f / static_cast<float>(shares));
      dp_->backward(scaler_->scale(loss), a + 1 == accum);
    }
    // Data parallel: the gradients summed over the processes, the loss averaged; one decision on
    // skipping and one clipping norm for all (with one process: nothing changes).
    dp_->finish();
    r.loss = dp_->mean(r.loss);
    if (!std::isfinite(r.loss)) scaler_->note_nonfinite_loss();
    r.report = amp::finish_step(*optimizer_, scaler_.get(), config_.precision.max_gradient_norm,
                                config_.precision.max_gradient_value, dp_->step_agreement());
  }
  quant_->update(dp_->fp8_agreement());  // data parallel: the scales follow the global batch
  ++global_step_;
  if (probe) {
    write_metrics(
        report::metrics_line(report::precision_stats_record(global_step_, probe->entries())));
  }
  if (!r.report.stepped) log(detail::skipped_step_line(global_step_, r.loss, r.report));
  if (auto wider = scaler_->take_fallback()) {
    r.fallback = report::FallbackRecord{global_step_, policy_.half, *wider,
                                        "loss scale stuck at its minimum " +
                                            support::scale_text(scaler_->options().min_loss_scale) +
                                            " (on_stuck: fall_back)"};
    policy_.half = *wider;
    log("precision falls back to " + std::string(numerics::name(*wider)) + " from step " +
        std::to_string(global_step_ + 1) + " on");
  }
  return r;
}

report::RunRecord Trainer::run_record() const {
  report::RunRecord r;
  r.format = policy_.half;
  if (const std::optional<precision::RecipeSettings> recipe = config_.precision.linear_recipe()) {
    r.fp8 = recipe->recipe == precision::Recipe::delayed;
    r.recipe = name_of(precision::kRecipeNames, recipe->recipe);
    for (const amp::LayerPlan& p : quant_->plan()) {
      r.layers.emplace_back(
          p.layer, p.recipe ? p.recipe->describe() : std::string(precision::kNoRecipeWord));
    }
  }
  r.loss_scaling = detail::loss_scaling_mode(scales_loss_ ? scaler_.get() : nullptr);
  r.model = name_of(config::kModelNames, config_.model.kind);
  r.parameters = parameter_count();
  r.unit = item_unit();
  r.items_per_step = items_per_step();
  r.start_step = global_step_;
  r.max_steps = config_.loop.max_steps;
  r.seed = config_.seed;
  r.cpu = support::cpu_name();
  r.settings = detail::precision_settings(config_.precision, policy_,
                                          scales_loss_ ? scaler_.get() : nullptr);
  r.settings.emplace_back("optimizer", optimizer_->name());
  if (config_.optimizer.state_format != numerics::Format::float32) {
    r.settings.emplace_back("optimizer state_dtype",
                            std::string(numerics::name(config_.optimizer.state_format)));
  }
  r.settings.emplace_back("learning rate", config_.schedule_text);
  r.same_bits_opt_levels = detail::same_bits_levels(policy_, has_attention(), {});
  return r;
}

bool Trainer::has_attention() const {
  return config_.model.kind == config::ModelKind::gpt;
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

RunSummary Trainer::evaluate_all(ResumeSettings settings) {
  const std::vector<std::string> all = list_checkpoints(run_dir_);
  if (all.empty())
    throw Error("eval_all: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  std::optional<RunDirLock> lock;
  bool read_only = false;
  dp_->together([&] {
    dp_->on_root([&] {
      lock.emplace(run_dir_, RunDirLock::Use::evaluate);
      read_only = lock->read_only();
      if (!read_only) metrics_->open();
    });
  });
  records_evals_ = dp_->from_root(read_only ? "1" : "") != "1";
  if (!records_evals_) {
    log(run_dir_ +
        " is not writable here: the results are printed, not recorded in its "
        "metrics.jsonl");
  }
  task_->prepare_evaluation();
  RunSummary summary;
  for (const std::string& path : all) {
    // Collective (data parallel: a checkpoint one process cannot read is skipped by all): a
    // checkpoint that cannot be restored costs its own validation, not the others'.
    try {
      dp_->together([&] { restore(path, load_checkpoint(path), false, settings); });
    } catch (const Error& e) {
      summary.unusable.push_back({path, e.what()});
      log(std::string(e.what()) + " (not evaluated; eval_all goes on with the next checkpoint)");
      continue;
    }
    summary.evals.push_back({path, global_step_, evaluate()});
  }
  if (summary.evals.empty()) throw Error(summary.unusable.front().error);
  summary.eval = summary.evals.back().result;
  summary.global_step = summary.evals.back().step;
  return summary;
}

void Trainer::check_schedules(const std::string& length) const {
  try {
    optimizer_->check_schedules(config_.loop.max_steps);
  } catch (const Error& e) {  // the keys that decide it: the schedule's and the run's length
    throw Error(std::string(config_.schedulers.empty() ? "trainer.init.optimizer"
                                                       : "trainer.init.schedulers") +
                " over " + length + ": " + e.what());
  }
}

ResumeFrom parse_resume(const std::string& word, const std::string& what) {
  if (word.empty()) throw Error(what + ": an empty value (latest, or a checkpoint path)");
  return word == "latest" ? ResumeFrom::latest() : ResumeFrom::checkpoint(word);
}

RunSummary Trainer::run(RunMode mode, const ResumeFrom& resume, ResumeSettings settings) {
  if (mode == RunMode::eval_all && resume.kind == ResumeFrom::Kind::checkpoint) {
    throw Error("resume: '" + resume.path +
                "' names one checkpoint, but the eval_all mode evaluates every checkpoint of " +
                run_dir_ + " (resume nothing, or evaluate that one in the eval mode)");
  }
  if (mode == RunMode::eval_all) return evaluate_all(settings);
  const bool training = mode != RunMode::eval;
  if (!training && !resume) throw Error("eval: give --resume latest or a checkpoint path");
  const bool latest = resume.kind == ResumeFrom::Kind::latest;
  if (!training && !std::filesystem::is_directory(run_dir_) && latest) {
    throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
  }
  // Before the first step: the run directory (locked, writable), the checkpoint, which
  // checkpoints the run may replace, the schedules, the metrics file, the validation data.
  // Data parallel: rank 0 holds the lock and judges the run directory; every process loads
  // the checkpoint rank 0 chose, and they must restore the same state.
  std::optional<RunDirLock> lock;
  std::string chosen;
  bool read_only = false;  // an evaluation of a run directory it cannot (or need not) write
  dp_->together([&] {
    dp_->on_root([&] {
      lock.emplace(run_dir_, training ? RunDirLock::Use::train : RunDirLock::Use::evaluate);
      read_only = lock->read_only();
      std::optional<LoadedCheckpoint> newest;
      if (latest) newest = load_latest_checkpoint(run_dir_);
      if (latest && newest) chosen = newest->path;
      if (resume.kind == ResumeFrom::Kind::checkpoint) chosen = resume.path;
      if (chosen.empty() && !training) {
        throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
      }
      if (training) {
        check_checkpoints_are_ours(
            run_dir_, chosen.empty() ? std::nullopt : std::optional<std::string>(chosen));
      }
    });
  });
  chosen = dp_->from_root(chosen);
  // Each process the file it was given.
  if (resume.kind == ResumeFrom::Kind::checkpoint) chosen = resume.path;
  if (!chosen.empty()) {
    std::int64_t written_by = 1, their_batch = config_.train_data.batch_size;
    dp_->together([&] {
      const Checkpoint c = load_checkpoint(chosen);
      const CheckpointMeta meta = decode_checkpoint_meta(c.metadata, chosen);
      written_by = meta.dist_ranks;
      their_batch = config_of_checkpoint(meta, chosen).train_data.batch_size;
      restore(chosen, c, training, settings);
    });
    // Every process read the same file: the same state, or an Error naming the one that
    // differs (a run directory that is not shared, a stale copy).
    dp_->require_identical_state(state_tensors(), state_metadata(),
                                 "the state restored from " + chosen);
    if (written_by != dp_->size()) {
      log("the checkpoint was written by " + std::to_string(written_by) + " process" +
          (written_by == 1 ? "" : "es") + ", this run has " + std::to_string(dp_->size()) +
          ": the data carries on from the same sample (" +
          (their_batch == config_.train_data.batch_size
               ? "the global batch of " + std::to_string(their_batch) + " is unchanged"
               : "the global batch changes from " + std::to_string(their_batch) + " to " +
                     std::to_string(config_.train_data.batch_size)) +
          "); the steps are not bit-identical to a run that keeps its number of processes");
    }
  } else if (resume) {
    log("no checkpoint in " + run_dir_ + ": starting from step 0");
  }
  read_only = dp_->from_root(read_only ? "1" : "") == "1";
  if (!training && !chosen.empty()) {
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::weakly_canonical(chosen, ec);
    records_evals_ = !ec && std::filesystem::equivalent(file.parent_path(), run_dir_, ec) && !ec;
    if (!records_evals_) {
      log("evaluating " + chosen + ", a checkpoint from outside " + run_dir_ +
          ": the result is not recorded in its metrics.jsonl");
    } else if (read_only) {
      records_evals_ = false;
      log(run_dir_ +
          " is not writable here: the result is printed, not recorded in its "
          "metrics.jsonl");
    }
  }
  // The schedules from the step the run starts at, before the metrics file is touched.
  if (training) {
    check_schedules("trainer.init.loop.max_steps " + std::to_string(config_.loop.max_steps));
  }
  if (training || records_evals_) dp_->together([&] { dp_->on_root([&] { metrics_->open(); }); });
  if (evaluates(mode)) task_->prepare_evaluation();
  if (!training) {
    RunSummary summary;
    summary.eval = evaluate();
    summary.global_step = global_step_;
    return summary;
  }
  dp_->on_root([&] {
    check_checkpoint_names_are_files(run_dir_);
    if (const int n = remove_unfinished_checkpoints(run_dir_)) {
      log("deleted " + std::to_string(n) + " unfinished checkpoint file" + (n == 1 ? "" : "s") +
          " (*.tmp) in " + run_dir_ + ", left by a run stopped while it saved");
    }
  });
  return train_loop(mode);
}

}  // namespace mantissa::train
