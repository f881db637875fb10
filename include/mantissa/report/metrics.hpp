#pragma once
// metrics.jsonl: what a training run records, one JSON object per line, and the reader that
// turns a run directory's file back into typed records (report/report.hpp draws from them).
// Four kinds of line, told apart by their first key (docs/config.md "Outputs"):
//   {"run": {...}}                   the run's settings; first line of every run() that trains
//   {"step": N, "loss": ..., ...}    one logging window (every logging.log_steps steps)
//   {"eval_step": N, ...}            one validation run
//   {"skipped_step": N, ...}         a step skipped for non-finite gradients, with the
//                                    parameters whose gradients overflowed
// Steps count from 1: "step": N is the state after N optimizer steps of the loop.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/recipe.hpp"

namespace mantissa::report {

enum class LossScalingMode { none, fixed, dynamic };
inline constexpr NameTable<LossScalingMode, 3> kLossScalingModeNames = {
    {{"none", LossScalingMode::none},
     {"static", LossScalingMode::fixed},
     {"dynamic", LossScalingMode::dynamic}}};
static_assert(in_enum_order(kLossScalingModeNames,
                            static_cast<std::size_t>(LossScalingMode::dynamic) + 1));

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
};

// The matrix-product routes the run has chosen so far (kernels::route_records()), written
// after the first step that chose a new one: {"routes": <step>, "products": [{"m", "n",
// "k", "trans", "format", "passes", "threads", "route", "source", "gflops": {route: rate}}]}.
struct RoutesRecord {
  std::int64_t step = 0;
  std::vector<kernels::RouteRecord> products;
};

// One line each (no newline). Non-finite numbers are written as null.
std::string metrics_line(const RunRecord& r);
std::string metrics_line(const WindowRecord& r, std::string_view unit);
std::string metrics_line(const EvalRecord& r);
std::string metrics_line(const SkipRecord& r);
std::string metrics_line(const RoutesRecord& r);

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
};

// Parses metrics.jsonl text. Throws mantissa::Error "<source>:<line>: ..." for a line that is
// not one JSON object (a torn write), a record of no known kind, or a missing or mistyped
// field (a number field may be null: not finite); and "<source>: ..." when no run record
// precedes the first step record.
RunLog parse_metrics(std::string_view text, const std::string& source);
// Reads <run_dir>/metrics.jsonl; throws mantissa::Error naming the file when it cannot.
RunLog read_run_log(const std::string& run_dir);

}  // namespace mantissa::report
