#pragma once
// The Trainer: builds the model, data, optimizer, schedule and loss scaler from a
// config::TrainerConfig and runs train, eval or train_and_eval in the vendor's order (forward,
// scaled backward, unscale, clip, step or skip, update scale, zero grads; the schedule advances on
// taken steps), with gradient accumulation, periodic evaluation, metrics as JSON lines,
// and atomic checkpoints that resume bit for bit. It draws nothing: progress and log lines go
// to the TrainerEvents the program supplies (apps/mantissa renders them on the terminal).
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/data/datasets.hpp"
#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/names.hpp"
#include "mantissa/report/metrics.hpp"

namespace mantissa::amp {
class QuantizedLayers;
}  // namespace mantissa::amp

namespace mantissa::train {

// eval: one checkpoint; eval_all: every checkpoint of the run directory, oldest first.
enum class RunMode { train, eval, train_and_eval, eval_all };
inline constexpr NameTable<RunMode, 4> kRunModeNames = {
    {{"train", RunMode::train},
     {"eval", RunMode::eval},
     {"train_and_eval", RunMode::train_and_eval},
     {"eval_all", RunMode::eval_all}}};
static_assert(in_enum_order(kRunModeNames, static_cast<std::size_t>(RunMode::eval_all) + 1));

struct EvalResult {
  bool text = false;      // perplexity (text) or accuracy (images)
  double loss = 0;        // mean of the per-step losses
  double perplexity = 0;  // text: exp(sum of token losses / tokens)
  double accuracy = 0;    // images
  std::int64_t steps = 0;
};

// One checkpoint's validation (eval_all).
struct CheckpointEval {
  std::string checkpoint;
  std::int64_t step = 0;
  EvalResult result;
};

// A checkpoint eval_all could not evaluate, and why (the error's text, naming the file).
struct UnusableCheckpoint {
  std::string checkpoint;
  std::string error;
};

struct RunSummary {
  std::int64_t global_step = 0;
  std::int64_t skipped_steps = 0;
  double last_loss = 0;
  std::optional<EvalResult> eval;     // the last validation
  std::vector<CheckpointEval> evals;  // eval_all: every checkpoint's that could be evaluated
  // eval_all: those that could not (unreadable, corrupt, another model's), oldest first; the
  // others are evaluated all the same. Where none could be, run() throws the first's error.
  std::vector<UnusableCheckpoint> unusable;
  std::string last_checkpoint;
  bool interrupted = false;
  // interrupted: the job's stop signal (TrainerHooks::stop_signal; data parallel: the first
  // rank's that caught one); 0 when the stop was asked otherwise (request_stop).
  int stop_signal = 0;
};
// "SIGINT", "SIGTERM", "SIGHUP", "signal 99" (glibc's names); "" for 0 (a stop the program
// asked for).
std::string signal_name(int signo);

// What training keeps between steps, in bytes (bench train prints it per parameter).
struct TrainingStateBytes {
  std::int64_t weights = 0;    // the parameters in their own format (float32 or bfloat16)
  std::int64_t gradients = 0;  // their gradients
  std::int64_t optimizer = 0;  // moments and compensation buffers
  std::int64_t copies = 0;     // the weights' cached half-precision copies
  std::int64_t total() const { return weights + gradients + optimizer + copies; }
};

// One optimizer step of train_step().
struct StepResult {
  double loss = 0;  // mean over the micro-batches
  amp::StepReport report;
  // The scale reached its floor with on_stuck: fall_back at this step: the format changed.
  std::optional<report::FallbackRecord> fallback;
};

// The figures of one logged training window (every logging.log_steps steps and the last).
struct Progress {
  std::int64_t step = 0, max_steps = 0;
  double loss = 0;                   // mean over the window's steps
  std::optional<double> loss_scale;  // the scale the last step used; none without a scaler
  double learning_rate = 0, grad_norm = 0;
  std::int64_t skipped_steps = 0;
  double items_per_second = 0;
  const char* unit = "";  // "tokens" or "samples"
  double eta_seconds = 0;
};

// What a run reports as it goes. The library calls these; the program decides what to draw.
// Every method does nothing by default.
class TrainerEvents {
 public:
  virtual ~TrainerEvents() = default;
  // One line of news: the run's setup, resumption, skipped steps, checkpoints, fall-backs.
  virtual void message(const std::string& line) { (void)line; }
  virtual void progress(const Progress& p) { (void)p; }
  // Before an evaluation mid-run (a live progress display may end its line) and after it.
  virtual void evaluating(std::int64_t step) { (void)step; }
  virtual void evaluated(const EvalResult& r, std::int64_t step) { (void)r, (void)step; }
};

// What the program lends the trainer: where events go, the KJV corpus's text (needed only
// when the kjv dataset is not cached yet in its data_dir), the processes of a data-parallel
// job (docs/distributed.md): the program's dist::Runtime's world under mpirun; by default one
// process. With several, every process runs the same Trainer on its part of each global
// batch; rank 0 alone reports events, writes metrics and checkpoints. And a stop flag its
// signal handlers set (SIGINT, SIGTERM): when it turns true, run() checkpoints at the next
// step boundary and returns with RunSummary::interrupted (every process after the same step),
// with the signal number they store in stop_signal (recorded in the metrics' end record).
struct TrainerHooks {
  TrainerEvents* events = nullptr;  // not owned; null: the run reports nothing
  data::CorpusProvider kjv_corpus;
  dist::Communicator world = {};
  const std::atomic<bool>* stop = nullptr;        // not owned
  const std::atomic<int>* stop_signal = nullptr;  // not owned; 0 or the signal caught
};

// When a checkpoint resumed for training was made with a precision or optimizer (settings,
// learning rate, schedulers) other than the config's: an error naming the differences
// (must_match), or the config's settings win (the checkpoint's optimizer state is taken only
// for the same optimizer, its loss-scaler state only for the same precision), or the
// checkpoint's win (they replace the config's for the rest of the run).
enum class ResumeSettings { must_match, config, checkpoint };
inline constexpr NameTable<ResumeSettings, 2> kResumeSettingsNames = {
    {{"config", ResumeSettings::config}, {"checkpoint", ResumeSettings::checkpoint}}};
// must_match has no word (it is what leaving --resume-settings out means): every other value
// has one, in enum order after it.
static_assert(kResumeSettingsNames.size() + 1 ==
                  static_cast<std::size_t>(ResumeSettings::checkpoint) + 1 &&
              kResumeSettingsNames[0].value == ResumeSettings::config &&
              kResumeSettingsNames[1].value == ResumeSettings::checkpoint);

// Which checkpoint a run starts from: none (a fresh run), the newest of the run directory
// (if any: never skipped, a corrupt one is an error), or a given checkpoint file or run
// directory. The word `latest` exists only where text enters (the command line, Python):
// parse_resume turns it into ResumeFrom::latest().
struct ResumeFrom {
  enum class Kind { none, latest, checkpoint };
  Kind kind = Kind::none;
  std::string path;  // Kind::checkpoint only

  static ResumeFrom latest() { return {Kind::latest, {}}; }
  static ResumeFrom checkpoint(std::string path) { return {Kind::checkpoint, std::move(path)}; }
  explicit operator bool() const { return kind != Kind::none; }
  bool operator==(const ResumeFrom&) const = default;
};
// "latest" -> ResumeFrom::latest(); any other non-empty word -> that checkpoint path; ""
// throws mantissa::Error naming `what`.
ResumeFrom parse_resume(const std::string& word, const std::string& what);

// Throws mantissa::Error, naming `what`, when a model of `parameters` parameters cannot fit
// this machine's memory: its float32 weights and gradients (8 bytes a parameter) must.
void check_model_fits(std::int64_t parameters, const std::string& what);

class Task;          // the model + data pairing (text or images)
class DataParallel;  // the processes of a data-parallel job
class MetricsFile;
struct Checkpoint;

class Trainer {
 public:
  explicit Trainer(config::TrainerConfig config, TrainerHooks hooks = {});
  ~Trainer();

  // resume: which checkpoint to start from (ResumeFrom); eval needs one; eval_all reads every
  // checkpoint of the run directory instead. Everything is checked before the first step:
  // the run directory (locked, writable, holding no checkpoint this run may not replace),
  // the metrics file, the validation data, the schedules' values, the checkpoint.
  RunSummary run(RunMode mode, const ResumeFrom& resume = {},
                 ResumeSettings settings = ResumeSettings::must_match);
  EvalResult evaluate();
  // One training step: grad_accum_steps micro-batches (forward, scaled backward), then
  // unscale, clip, step or skip, update the scale. Advances the global step. run() is a loop
  // of these; benchmarks time them one by one.
  StepResult train_step();
  std::int64_t global_step() const { return global_step_; }
  std::int64_t items_per_step() const;  // tokens or samples per step
  const char* item_unit() const;        // "tokens" or "samples"
  std::int64_t parameter_count() const;
  // What the parameters, their gradients, the optimizer and the cached copies hold now.
  TrainingStateBytes training_state_bytes() const;
  // Every learning-rate schedule from the current step to loop.max_steps, before the first
  // step: mantissa::Error naming the schedule's key and `length` (what sets the run's length,
  // e.g. "trainer.init.loop.max_steps 600") when one fails there. run() checks it itself.
  void check_schedules(const std::string& length) const;
  const precision::Policy& policy() const { return policy_; }
  // Asks a running run() to checkpoint and return at the next step boundary (Ctrl-C). In a
  // data-parallel job a request on any process stops every process after the same step.
  void request_stop() { stop_.store(true); }
  // Data parallel: this process's rank and the number of processes (0 and 1 without mpirun),
  // and the gradient reducer's figures (null with one process).
  int rank() const;
  int ranks() const;
  const dist::ReducerStats* reducer_stats() const;

  // Checkpoint contents now (the tests compare them bit for bit).
  std::map<std::string, tensor::Tensor> state_tensors() const;
  std::map<std::string, std::string> state_metadata() const;
  std::string run_dir() const { return run_dir_; }
  std::string save_checkpoint_now();
  // The settings this run trains under, as its metrics.jsonl records them first.
  report::RunRecord run_record() const;
  // "bfloat16, POL 1, mxfp4 linear layers": the policy and the linear layers' recipe.
  std::string precision_text() const;

 private:
  // Loads a checkpoint: for training, every part of the state (settings as `settings` says);
  // for evaluation, the model and the step (the precision as `settings` says).
  void restore(const std::string& path, const Checkpoint& checkpoint, bool for_training,
               ResumeSettings settings);
  // The checkpoint's run settings against the config's, applied as `settings` says.
  // A checkpoint's model must be the config's (train and eval); an Error naming the field.
  void check_model_of(const std::string& path, const config::TrainerConfig& theirs) const;
  // Log lines for a resumed run's seed and training data that differ from the checkpoint's.
  void note_run_differences(const config::TrainerConfig& theirs);
  void reconcile_settings(const std::string& path, const config::TrainerConfig& theirs,
                          ResumeSettings settings, bool& take_optimizer_state,
                          bool& take_scaler_state);
  // Evaluation: the checkpoint's precision against the config's, as `settings` says (an
  // Error when they differ and nobody said which wins).
  void reconcile_eval_precision(const std::string& path, const config::TrainerConfig& theirs,
                                ResumeSettings settings);
  void build_optimizer_and_scaler();
  // The linear layers' recipe (precision.recipe or precision.fp8) on the model; errors name
  // the key under trainer.init.precision.
  void attach_recipes();
  // The newest checkpoint of the run directory, as rank 0 sees it.
  std::optional<std::string> latest_of_job() const;
  RunSummary evaluate_all(ResumeSettings settings);
  RunSummary train_loop(RunMode mode);
  void train_steps(RunSummary& summary, std::int64_t eval_every, std::int64_t& saved_at);
  bool stop_requested() const;
  void log(const std::string& line) const;
  void write_metrics(const std::string& json_line);
  // A checkpoint's matrix-product routes, taken for this run (said when some cannot be).
  void take_routes(const std::vector<kernels::RouteRecord>& routes);
  // After a step that chose new routes: a routes record, and at the first, a line saying so.
  void record_new_routes();
  // A skipped step's record (and the last skipped step the end record names).
  void record_skip(std::int64_t step, double loss_scale, std::vector<std::string> tensors,
                   std::optional<autograd::NonfiniteOrigin> first_nonfinite = std::nullopt);
  // The end record: how the run ended (metrics.hpp OutcomeRecord). `best_effort`: a failure
  // to write it is ignored (the run is failing already, with an error of its own).
  void record_end(report::RunOutcome outcome, const RunSummary& summary, const std::string& message,
                  bool best_effort);
  // A model with attention (POL also decides attention's softmax format).
  bool has_attention() const;

  config::TrainerConfig config_;
  TrainerEvents* events_;
  const std::atomic<bool>* external_stop_;
  const std::atomic<int>* stop_signal_;
  TrainerEvents silent_;
  std::unique_ptr<DataParallel> dp_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<amp::GradScaler> scaler_;
  std::unique_ptr<amp::QuantizedLayers> quant_;  // the linear layers' recipes (may be empty)
  // Whether scaler_ scales the loss (float16, cbfloat16 with loss scaling), or only guards
  // the steps (scale 1: float32, bfloat16, no loss scaling).
  bool scales_loss_ = false;
  precision::Policy policy_;
  std::int64_t global_step_ = 0;
  std::string run_dir_;
  // The newest checkpoint known to hold finite values (written by this run, or resumed from):
  // keeping only the newest `checkpoint.keep` never deletes it.
  std::string last_finite_checkpoint_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<MetricsFile> metrics_;
  // Whether evaluations go into metrics.jsonl: not for a checkpoint from another directory
  // (its result is no part of this run's history).
  bool records_evals_ = true;
  std::size_t routes_recorded_ = 0;                // route_records() already in a routes record
  std::optional<std::int64_t> last_skipped_step_;  // of this run, for its end record
};

}  // namespace mantissa::train
