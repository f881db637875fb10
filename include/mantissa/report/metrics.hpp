#pragma once
// metrics.jsonl: what a training run records, one JSON object per line, and the reader that
// turns a run directory's file back into typed records (report/report.hpp draws from them).
// Kinds of line, told apart by their first key (docs/config.md "Outputs"):
//   {"run": {...}}                   the run's settings; first line of every run() that trains
//   {"step": N, "loss": ..., ...}    one logging window (every logging.log_steps steps)
//   {"eval_step": N, ...}            one validation run
//   {"skipped_step": N, ...}         a step skipped for non-finite gradients, with the op
//                                    where the backward first went non-finite and the
//                                    parameters whose gradients overflowed
//   {"routes": N, ...}               the matrix-product routes chosen so far
//   {"fallback_step": N, ...}        the format changed (on_stuck: fall_back) after step N
//   {"end": N, "outcome": ...}       how the run ended, and why
//   {"precision_stats": N, ...}      what each rounding site lost on a sampled step
// Steps count from 1: "step": N is the state after N optimizer steps of the loop.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/quant_probe.hpp"
#include "mantissa/precision/recipe.hpp"

namespace mantissa::report {

enum class LossScalingMode { none, fixed, dynamic };
inline constexpr NameTable<LossScalingMode, 3> kLossScalingModeNames = {
    {{"none", LossScalingMode::none},
     {"static", LossScalingMode::fixed},
     {"dynamic", LossScalingMode::dynamic}}};
static_assert(in_enum_order(kLossScalingModeNames,
                            static_cast<std::size_t>(LossScalingMode::dynamic) + 1));

// How a training run ended (the `end` record): it ran its max_steps; the dynamic loss scale
// had to go below its floor (on_stuck: raise); too many steps in a row (or all of them) were
// not applied for non-finite values; a signal (or request_stop) stopped it after a
// checkpoint; or another error stopped it.
enum class RunOutcome { completed, loss_scale_floor, nonfinite_steps, interrupted, error };
inline constexpr NameTable<RunOutcome, 5> kRunOutcomeNames = {
    {{"completed", RunOutcome::completed},
     {"loss_scale_floor", RunOutcome::loss_scale_floor},
     {"nonfinite_steps", RunOutcome::nonfinite_steps},
     {"interrupted", RunOutcome::interrupted},
     {"error", RunOutcome::error}}};
static_assert(in_enum_order(kRunOutcomeNames, static_cast<std::size_t>(RunOutcome::error) + 1));

// A setting as the report shows it: its name and its value, written out.
using SettingRow = std::pair<std::string, std::string>;

struct RunRecord {
  numerics::Format format = numerics::Format::float32;  // computes in; float32: mixed precision off
  bool fp8 = false;  // fp8 linear layers with delayed scaling, the rest in `format`
  // The linear layers' recipe (precision/recipe.hpp: "mxfp4"; empty: none) and what each
  // Linear runs ([layer, recipe described or "none"], per-layer overrides applied).
  std::string recipe;
  std::vector<SettingRow> layers;
  LossScalingMode loss_scaling = LossScalingMode::none;  // none also when there is no scaler
  std::string model;                                     // "gpt", "mlp", "cnn"
  std::int64_t parameters = 0;
  std::string unit = "tokens";  // what items_per_second counts: tokens or samples
  std::int64_t items_per_step = 0;
  std::int64_t start_step = 0;  // 0, or the step a resumed run continued from
  std::int64_t max_steps = 0;
  std::uint64_t seed = 0;
  std::string cpu;                   // the CPU's name
  std::vector<SettingRow> settings;  // the mixed-precision settings in force, in order
  // The other precision_opt_level values that compute the same bits as this run's on the
  // same routes, as far as known before the first step (precision::same_bits_opt_levels);
  // written only when there are some.
  std::vector<int> same_bits_opt_levels;
};

struct WindowRecord {
  std::int64_t step = 0;
  double loss = 0;                   // mean over the window's steps
  double learning_rate = 0;          // of the next step
  std::optional<double> loss_scale;  // the scale the window's last step used (when logged)
  std::int64_t skipped_steps = 0;
  double grad_norm = 0;  // unscaled, before clipping (NaN when not finite)
  double items_per_second = 0;
  std::optional<double> peak_rss_mib;  // the process's peak resident memory so far
  std::optional<precision::Fp8WindowCounts>
      fp8;  // runs with fp8 linear layers: fp8_overflows,
            // fp8_underflows, fp8_tensors {name: {overflows, underflows}}
};

struct EvalRecord {
  std::int64_t step = 0;
  double loss = 0;
  std::optional<double> perplexity;  // text
  std::optional<double> accuracy;    // images
  std::int64_t batches = 0;
};

struct SkipRecord {
  std::int64_t step = 0;
  double loss_scale = 1;                // the scale the skipped step used
  std::vector<std::string> overflowed;  // parameters whose gradients held inf or NaN
  // The first op, in backward order, whose backward made a non-finite gradient
  // (autograd/nonfinite_watch.hpp); none when the backward stayed finite (the overflow came
  // later: in a sum of gradients, the optimizer's check) or the record is older.
  std::optional<autograd::NonfiniteOrigin> first_nonfinite = std::nullopt;
};

// A change of format during the run: the dynamic loss scale reached its floor at `step` (a
// skipped step) with on_stuck: fall_back, and the steps after it compute in `to`.
struct FallbackRecord {
  std::int64_t step = 0;
  numerics::Format from = numerics::Format::float16;
  numerics::Format to = numerics::Format::bfloat16;
  std::string reason;  // the scaler's words
};

// How the run ended: its last step (the one that stopped it, for a stop of the step guard),
// the outcome, the skipped steps in all, the last skipped step, the signal (interrupted:
// "SIGINT", "SIGTERM"; "" when the program asked), the last checkpoint written, and why it
// stopped (the error's message; "" when it completed or was interrupted).
struct OutcomeRecord {
  std::int64_t step = 0;
  RunOutcome outcome = RunOutcome::completed;
  std::int64_t skipped_steps = 0;
  std::optional<std::int64_t> last_skipped_step;
  std::string signal;
  std::string checkpoint;
  std::string message;
};

// "Which layer loses what" on one sampled step (logging.precision_stats_steps): a row per
// rounding site (layer, op, role, format), written {"precision_stats": <step>, "sites":
// [{"layer", "op", "role", "format", "elements", "flushed", "subnormal", "saturated",
// "overflowed", "nonfinite", "snr_db", "scale_min", "scale_max"}]}; snr_db is null when
// nothing was lost, the scale range is there only where the format has a scale.
struct PrecisionSite {
  std::string layer;  // "" for ops outside every named module
  std::string op;
  precision::QuantRole role = precision::QuantRole::input;
  numerics::Format format = numerics::Format::float32;
  precision::QuantCounts counts;
  std::optional<double> snr_db;  // nullopt: no error (every value kept exactly)
  std::optional<precision::QuantStats::ScaleRange> scale;
  bool operator==(const PrecisionSite&) const = default;
};
struct PrecisionStatsRecord {
  std::int64_t step = 0;
  std::vector<PrecisionSite> sites;
};
// The record of a sampled step's probe entries.
PrecisionStatsRecord precision_stats_record(std::int64_t step,
                                            const std::vector<precision::QuantProbe::Entry>& e);

// The matrix-product routes the run has chosen so far (kernels::route_records()), written
// after the first step that chose a new one: {"routes": <step>, "products": [{"m", "n",
// "k", "trans", "format", "passes", "threads", "route", "source", "gflops": {route: rate}}]}.
struct RoutesRecord {
  std::int64_t step = 0;
  std::vector<kernels::RouteRecord> products;
  // The other precision_opt_level values that compute the same bits as the run on these
  // routes (precision::same_bits_opt_levels); written only when there are some.
  std::vector<int> same_bits_opt_levels;
};

// One line each (no newline). Non-finite numbers are written as null.
std::string metrics_line(const RunRecord& r);
std::string metrics_line(const WindowRecord& r, std::string_view unit);
std::string metrics_line(const EvalRecord& r);
std::string metrics_line(const SkipRecord& r);
std::string metrics_line(const RoutesRecord& r);
std::string metrics_line(const PrecisionStatsRecord& r);
std::string metrics_line(const FallbackRecord& r);
std::string metrics_line(const OutcomeRecord& r);

// A resumed run whose settings differ from the part of the run before it (`train --resume
// --resume-settings config`): at the step it continued from, each setting whose value
// changed. The first row, when the precision changed, is "precision" (precision_name's
// words); the others are the run record's settings rows by name ("(none)" where one side
// has no such row). After a fall-back in the part before, the rows a fall-back changes
// (the format's own settings) are not compared: only the optimizer's, the learning rate and
// master_weights are.
struct ChangedSetting {
  std::string name, before, after;
};
// The name of a ChangedSetting that is the precision itself.
inline constexpr std::string_view kPrecisionChange = "precision";
struct SettingsChange {
  std::int64_t step = 0;
  std::vector<ChangedSetting> changed;
};

// A run as its metrics.jsonl tells it. A run record starts a run over: records of steps
// after its start_step (from an earlier run in the same directory, or past the checkpoint a
// resumed run continued from) are dropped, so the log is the history that led to now.
struct RunLog {
  std::string source;  // the file read
  RunRecord run;
  std::vector<WindowRecord> windows;
  std::vector<EvalRecord> evals;
  std::vector<SkipRecord> skips;
  std::vector<RoutesRecord> routes;
  std::vector<PrecisionStatsRecord> precision_stats;
  std::vector<FallbackRecord> fallbacks;
  std::vector<SettingsChange> settings_changes;  // one per resume in other settings
  std::optional<OutcomeRecord> outcome;          // none: still running, killed, or an older writer
};

// What a run trains in, as `compare --formats` and `bench train --precision` name it: its
// linear layers' recipe by its short name (fp8 for delayed scaling, mxfp4, ...), or its
// format.
std::string precision_name(const RunRecord& r);
// What a run trained in, as a label: precision_name, and after each fall-back or resume in
// another precision the one it continued in, in step order: "float16 -> bfloat16",
// "float32 -> bfloat16".
std::string format_label(const RunLog& log);
// The precision a run started in (the first of format_label's words).
std::string start_precision(const RunLog& log);
// One line on how the run ended: "completed 8 steps", "stopped at the loss-scale floor at
// step 2 of 8 (last skipped step 2): <why>", "interrupted by SIGTERM at step 5 of 8
// (checkpoint ...)", ..., or that no end was recorded.
std::string outcome_text(const RunLog& log);
// "fell back from float16 to bfloat16 after step 12: <why>", one per fall-back, in order.
std::vector<std::string> fallback_texts(const RunLog& log);
// "resumed at step 4 in other settings: precision float32 -> bfloat16, learning rate 0.001
// -> 0.01", one per settings change, in order.
std::vector<std::string> settings_change_texts(const RunLog& log);

// A run's training throughput measured interleaved with the other runs' (`mantissa compare`:
// every format's training steps in one process, step by step in turn, so each sees the same
// machine): the only throughput the report compares across runs. Runs trained one after
// another measure the machine's other work as much as the format. One JSON line each in
// <compare dir>/throughput.jsonl: {"interleaved_throughput": "<format label>", "unit",
// "items_per_s" (the median step's), "slowest_items_per_s", "fastest_items_per_s", "steps"}.
struct ThroughputRecord {
  std::string run;  // the run's format as compare names it: float32, ..., fp8
  std::string unit = "tokens";
  double items_per_second = 0;
  double slowest = 0, fastest = 0;  // the slowest and fastest timed step, in items per second
  std::int64_t steps = 0;           // timed steps
};
std::string metrics_line(const ThroughputRecord& r);
// Throws mantissa::Error "<source>:<line>: ..." for a line that is not such a record.
std::vector<ThroughputRecord> parse_throughput(std::string_view text, const std::string& source);
std::vector<ThroughputRecord> read_throughput(const std::string& path);

// Parses metrics.jsonl text. Throws mantissa::Error "<source>:<line>: ..." for a line that is
// not one JSON object (a torn write), a record of no known kind, or a missing or mistyped
// field (a number field may be null: not finite); and "<source>: ..." when no run record
// precedes the first step record.
RunLog parse_metrics(std::string_view text, const std::string& source);
// Reads <run_dir>/metrics.jsonl; throws mantissa::Error naming the file when it cannot.
RunLog read_run_log(const std::string& run_dir);

}  // namespace mantissa::report
