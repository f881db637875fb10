#pragma once
// `mantissa bench train`: times training steps of a config one by one and reports the median
// throughput after warm-up, achieved GFLOP/s, model FLOP utilisation against a GEMM peak
// measured in the same process, peak resident memory, and (optionally) where the time goes
// per op class (kernels/profiler.hpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/config/config.hpp"
#include "mantissa/data/datasets.hpp"
#include "mantissa/dist/communicator.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::bench {

struct BenchOptions {
  std::int64_t steps = 10;   // timed steps
  std::int64_t warmup = 2;   // untimed steps first (primitive creation, pool warm-up)
  bool profile = false;      // per-op-class breakdown over the timed steps
  bool measure_peak = true;  // time a large GEMM of the run's format after the steps (MFU);
                             // not in a data-parallel job (the ranks would share the cores)
};

struct BenchResult {
  std::string model, precision, unit;        // unit: tokens or samples
  std::string route;                         // how the matrix products run (describe_route)
  std::vector<kernels::RouteRecord> routes;  // the routes chosen in this process so far
  std::int64_t parameters = 0;
  std::int64_t items_per_step = 0;
  std::vector<double> step_seconds;  // timed steps, in order
  std::vector<double> losses;        // every step's loss, warm-up included
  double median_seconds = 0;
  double items_per_second = 0;      // items_per_step / median_seconds
  double flops_per_step = 0;        // 0 when the model's FLOPs are not modelled
  double achieved_gflops = 0;       // flops_per_step / median_seconds
  double gemm_peak_gflops = 0;      // measured here (0 when not measured)
  double peak_rss_mib = 0;          // of this process, after the steps (before the peak GEMM)
  double peak_tensor_mib = 0;       // most tensor storage alive at once during the timed steps
  double pool_mib = 0;              // storage obtained from the system by the tensor pool
  train::TrainingStateBytes state;  // after the last step
  std::string training_state;       // master weights and optimizer state formats, in words
  std::optional<kernels::ProfileTable> profile;
  double profiled_seconds = 0;  // wall time of the profiled steps
  // Data parallel (docs/distributed.md): the processes (1 without mpirun; the figures above are
  // rank 0's, whose steps keep pace with the others' through the all-reduce, and the items are
  // the global batch's); the gradient buckets, the bytes this rank sends per step, and the
  // median time the timed steps waited in the all-reduce after the backward.
  int ranks = 1;
  std::string allreduce;  // "float32 wire, overlapped" ...
  std::int64_t buckets = 0;
  std::int64_t bytes_sent_per_step = 0;
  double median_allreduce_wait_seconds = 0;
  // Timed step by step in turn with other runs in the same process (run_interleaved_benchmark):
  // the memory figures are the process's, not this run's, and are not reported.
  bool interleaved = false;
  double mfu() const { return gemm_peak_gflops > 0 ? achieved_gflops / gemm_peak_gflops : 0; }
};

// Training FLOPs per step: GPT as the peer counts them (6 x parameters x tokens plus
// 12 x layers x hidden x context^2 x batch for attention); MLP 6 x parameters x samples;
// 0 (not modelled) for the CNN.
double training_flops_per_step(const config::TrainerConfig& config, std::int64_t parameters);

// Runs warm-up + timed steps of `config` (no checkpoints or metrics are written). `progress`
// receives one line per step (on rank 0); `kjv_corpus` and `world` as for the Trainer
// (TrainerHooks): under mpirun every rank runs it, data-parallel.
BenchResult run_train_benchmark(config::TrainerConfig config, const BenchOptions& options,
                                const std::function<void(const std::string&)>& progress = {},
                                const data::CorpusProvider& kjv_corpus = {},
                                const dist::Communicator& world = {});

// Runs several configs in one process, step by step in turn (warm-up steps, then each timed
// step of every run, the starting run rotating), so that every run sees the same machine: on
// a shared or noisy machine their ratios are then comparable where separate processes' are
// not. One result per config, in order (peak RSS not measured: the process is shared; a
// profile, when asked for, records each run's own steps). Not under mpirun.
std::vector<BenchResult> run_interleaved_benchmark(
    const std::vector<config::TrainerConfig>& configs, const BenchOptions& options,
    const std::function<void(const std::string&)>& progress = {},
    const data::CorpusProvider& kjv_corpus = {});

// The human-readable report (the profile table included when recorded).
std::string format_bench_report(const BenchResult& r);
// One JSON object with the same figures.
std::string bench_result_json(const BenchResult& r);
// Before a benchmark that will append its records to `path`: throws mantissa::Error unless
// `path` is absent, empty, or a regular file (a link to one counts) whose first line is such
// a record, so a checkpoint, a metrics file or a device named by mistake is never appended to.
void check_bench_records_file(const std::string& path);

}  // namespace mantissa::bench
