#include "mantissa/bench/benchmark.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/tensor/random.hpp"
#include "mantissa/tensor/storage.hpp"
#include "mantissa/train/trainer.hpp"
#include "support/machine.hpp"
#include "support/statistics.hpp"

namespace mantissa::bench {
namespace {

using train::StepResult;
using train::Trainer;
using train::TrainerEvents;
using train::TrainerHooks;
using train::TrainingStateBytes;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Best of a few timed runs of a 2048^3 GEMM whose inputs hold values of the policy's format,
// through the same kernels::gemm route the model's matmuls take.
double measure_gemm_peak(const precision::Policy& policy) {
  constexpr std::int64_t n = 2048;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  tensor::Rng rng(1);
  for (float& x : a) x = static_cast<float>(rng.normal());
  for (float& x : b) x = static_cast<float>(rng.normal());
  kernels::GemmPrecision gp;
  gp.route = policy.matmul_route;
  // Operands stored as the model stores them: packed in H under a half policy.
  const numerics::Format stored = policy.enabled() ? policy.half : numerics::Format::float32;
  const std::size_t bytes = static_cast<std::size_t>(numerics::traits(stored).storage_bytes);
  std::vector<std::uint8_t> pa(a.size() * bytes), pb(b.size() * bytes);
  numerics::encode_array(a.data(), a.size(), stored, pa.data());
  numerics::encode_array(b.data(), b.size(), stored, pb.data());
  if (policy.enabled()) {
    gp.format = policy.half;
    gp.passes = precision::matmul_passes(policy.half, policy.opt_level);
  }
  const kernels::GemmShape s = kernels::GemmShape::dense(n, n, n);
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {  // the first run creates primitives and scratch
    const auto t = Clock::now();
    kernels::gemm(s, kernels::Operand(pa.data(), stored), kernels::Operand(pb.data(), stored),
                  c.data(), false, gp);
    if (rep > 0) best = std::min(best, seconds_since(t));
  }
  return s.flops() / best / 1e9;
}

// The trainer's news lines (skipped steps, ignored settings) go where the step lines go.
class ForwardMessages final : public TrainerEvents {
 public:
  explicit ForwardMessages(const std::function<void(const std::string&)>& to) : to_(to) {}
  void message(const std::string& line) override {
    if (to_) to_(line);
  }

 private:
  const std::function<void(const std::string&)>& to_;
};

std::string fixed(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

// What sets a benchmark's length, for a schedule that does not last it.
std::string steps_text(const BenchOptions& o) {
  return "the benchmark's " + std::to_string(o.warmup + o.steps) + " steps (" +
         std::to_string(o.warmup) + " warm-up and " + std::to_string(o.steps) + " timed)";
}

// What a benchmark row says about the run before any step: model, precision, route, sizes.
BenchResult describe_run(const Trainer& trainer, const config::TrainerConfig& config) {
  BenchResult r;
  r.model = std::string(name_of(config::kModelNames, config.model.kind));
  r.precision = trainer.precision_text();
  r.route = kernels::describe_route(trainer.policy().half, trainer.policy().opt_level,
                                    trainer.policy().matmul_route);
  if (const auto recipe = config.precision.linear_recipe()) {
    // fp8 elements with float32 scales multiply as fp8; the others decoded to bfloat16 values
    // (quant/block_operand.hpp).
    const precision::LayerRecipe l = precision::resolve(*recipe, recipe->recipe);
    const bool fp8_operands =
        l.recipe == precision::Recipe::delayed ||
        ((l.recipe == precision::Recipe::current || l.recipe == precision::Recipe::blockwise) &&
         !l.power_of_two_scales);
    r.route += "; " + std::string(name_of(precision::kRecipeShortNames, l.recipe)) +
               " linear layers: " +
               kernels::describe_route(
                   fp8_operands ? numerics::Format::float8_e4m3 : numerics::Format::bfloat16, 1,
                   trainer.policy().matmul_route);
  }
  r.unit = trainer.item_unit();
  r.parameters = trainer.parameter_count();
  r.training_state =
      "master weights " +
      std::string(name_of(optim::kMasterWeightsNames, config.precision.master_weights)) +
      ", optimizer state " + std::string(numerics::name(config.optimizer.state_format));
  r.items_per_step = trainer.items_per_step();
  r.flops_per_step = training_flops_per_step(config, r.parameters);
  r.ranks = trainer.ranks();
  return r;
}

// One step of `trainer`, timed: its loss is recorded, and its time when `timed`.
double timed_step(Trainer& trainer, BenchResult& r, bool timed) {
  const auto t = Clock::now();
  const StepResult step = trainer.train_step();
  const double secs = seconds_since(t);
  r.losses.push_back(step.loss);
  if (timed) r.step_seconds.push_back(secs);
  return secs;
}

std::string step_line(const BenchResult& r, bool timed, std::int64_t s, std::int64_t total,
                      double secs) {
  return std::string(timed ? "step " : "warm-up step ") + std::to_string(s + 1) + "/" +
         std::to_string(total) + "  " + r.precision + "  loss " + fixed(r.losses.back(), 4) + "  " +
         fixed(static_cast<double>(r.items_per_step) / secs, 0) + " " + r.unit + "/s";
}

// The medians and rates from the timed steps.
void summarize_steps(BenchResult& r) {
  r.routes = kernels::route_records();
  r.median_seconds = support::median(r.step_seconds);
  r.items_per_second = static_cast<double>(r.items_per_step) / r.median_seconds;
  r.achieved_gflops = r.flops_per_step / r.median_seconds / 1e9;
}

void check_counts(const BenchOptions& o) {
  if (o.steps < 1)
    throw Error("bench: --steps must be at least 1 (got " + std::to_string(o.steps) + ")");
  if (o.warmup < 0)
    throw Error("bench: --warmup must be 0 or more (got " + std::to_string(o.warmup) + ")");
}

}  // namespace

double training_flops_per_step(const config::TrainerConfig& c, std::int64_t parameters) {
  const double p = static_cast<double>(parameters);
  const double per_batch = static_cast<double>(c.train_data.batch_size);
  const double accum = static_cast<double>(c.loop.grad_accum_steps);
  if (c.model.kind == config::ModelKind::gpt) {
    const double t = static_cast<double>(c.train_data.context);
    const double tokens = per_batch * t;
    return accum * (6.0 * p * tokens + 12.0 * static_cast<double>(c.model.gpt.num_hidden_layers) *
                                           static_cast<double>(c.model.gpt.hidden_size) * t * t *
                                           per_batch);
  }
  if (c.model.kind == config::ModelKind::mlp) return accum * 6.0 * p * per_batch;
  return 0;
}

BenchResult run_train_benchmark(config::TrainerConfig config, const BenchOptions& o,
                                const std::function<void(const std::string&)>& progress,
                                const data::CorpusProvider& kjv_corpus,
                                const dist::Communicator& world) {
  check_counts(o);
  const auto say = [&](const std::string& line) {
    if (progress && world.is_root()) progress(line);
  };
  config.loop.max_steps = o.warmup + o.steps;
  ForwardMessages messages(progress);
  Trainer trainer(config, {&messages, kjv_corpus, world});
  trainer.check_schedules(steps_text(o));
  BenchResult r = describe_run(trainer, config);
  std::vector<double> waits;
  for (std::int64_t s = 0; s < o.warmup + o.steps; ++s) {
    const bool timed = s >= o.warmup;
    if (timed && s == o.warmup) tensor::pool_reset_peak();
    if (timed && o.profile && s == o.warmup) kernels::profiler_start();
    const double secs = timed_step(trainer, r, timed);
    if (timed && trainer.reducer_stats() != nullptr) {
      waits.push_back(trainer.reducer_stats()->finish_seconds);
    }
    say(step_line(r, timed, s, o.warmup + o.steps, secs));
  }
  if (o.profile) {
    r.profile = kernels::profiler_stop();
    for (double s : r.step_seconds) r.profiled_seconds += s;
  }
  summarize_steps(r);
  if (const dist::ReducerStats* st = trainer.reducer_stats()) {
    r.allreduce = std::string(name_of(dist::kWireFormatNames, config.dist.allreduce_dtype)) +
                  " wire, " +
                  (config.dist.overlap ? "buckets started during the backward"
                                       : "every bucket started after the backward");
    r.buckets = st->buckets;
    r.bytes_sent_per_step = st->bytes_sent_per_step;
    r.median_allreduce_wait_seconds = support::median(waits);
  }
  r.state = trainer.training_state_bytes();
  r.peak_rss_mib = support::peak_rss_mib();  // training's, before the peak GEMM's buffers exist
  const tensor::PoolStats pool = tensor::pool_stats();
  r.peak_tensor_mib = static_cast<double>(pool.peak_live_bytes) / (1 << 20);
  r.pool_mib = static_cast<double>(pool.system_bytes) / (1 << 20);
  if (o.measure_peak && r.ranks == 1) {
    say("measuring the GEMM peak (2048^3, " + r.precision + ")");
    r.gemm_peak_gflops = measure_gemm_peak(trainer.policy());
  }
  return r;
}

std::vector<BenchResult> run_interleaved_benchmark(
    const std::vector<config::TrainerConfig>& configs, const BenchOptions& o,
    const std::function<void(const std::string&)>& progress,
    const data::CorpusProvider& kjv_corpus) {
  check_counts(o);
  if (configs.empty()) throw Error("bench: nothing to interleave (no configs)");
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<std::unique_ptr<ForwardMessages>> messages;
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<BenchResult> results;
  for (config::TrainerConfig c : configs) {
    c.loop.max_steps = o.warmup + o.steps;
    messages.push_back(std::make_unique<ForwardMessages>(progress));
    trainers.push_back(
        std::make_unique<Trainer>(c, TrainerHooks{messages.back().get(), kjv_corpus}));
    trainers.back()->check_schedules(steps_text(o));
    results.push_back(describe_run(*trainers.back(), c));
    if (results.back().ranks != 1) throw Error("bench: --interleave runs in one process only");
    results.back().interleaved = true;
  }
  const std::size_t n = trainers.size();
  for (std::int64_t s = 0; s < o.warmup + o.steps; ++s) {
    const bool timed = s >= o.warmup;
    // Step s of every run, one after another, starting from a different run each time so that
    // no run always comes first (or last) in a round.
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t i = (static_cast<std::size_t>(s) + j) % n;
      BenchResult& r = results[i];
      // A profile of each run's own steps: recording starts and stops around each.
      if (timed && o.profile) kernels::profiler_start();
      const double secs = timed_step(*trainers[i], r, timed);
      if (timed && o.profile) {
        const kernels::ProfileTable t = kernels::profiler_stop();
        if (!r.profile) r.profile = kernels::ProfileTable{};
        for (int p = 0; p < kernels::kPhaseCount; ++p) {
          for (int c = 0; c < kernels::kOpClassCount; ++c) (*r.profile)[p][c] += t[p][c];
        }
        r.profiled_seconds += secs;
      }
      say(step_line(r, timed, s, o.warmup + o.steps, secs));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    summarize_steps(results[i]);
    results[i].state = trainers[i]->training_state_bytes();
  }
  if (o.measure_peak) {
    for (std::size_t i = 0; i < n; ++i) {
      say("measuring the GEMM peak (2048^3, " + results[i].precision + ")");
      results[i].gemm_peak_gflops = measure_gemm_peak(trainers[i]->policy());
    }
  }
  return results;
}

std::string format_bench_report(const BenchResult& r) {
  std::string s;
  s += r.model + " (" + std::to_string(r.parameters) + " parameters), precision " + r.precision +
       "\n";
  s += "  matmul route     " + r.route + "\n";
  if (r.ranks > 1) {
    s += "  data parallel    " + std::to_string(r.ranks) + " ranks (figures of rank 0; " + r.unit +
         " of the global batch), " + r.allreduce + "\n";
    s += "  all-reduce       " + std::to_string(r.buckets) + " buckets, " +
         fixed(static_cast<double>(r.bytes_sent_per_step) / 1e6, 1) +
         " MB sent per step by rank 0, median wait after the backward " +
         fixed(r.median_allreduce_wait_seconds * 1e3, 1) + " ms\n";
  }
  s += "  median step      " + fixed(r.median_seconds * 1e3, 1) + " ms over " +
       std::to_string(r.step_seconds.size()) + " timed steps\n";
  s += "  throughput       " + fixed(r.items_per_second, 0) + " " + r.unit + "/s\n";
  if (r.flops_per_step > 0) {
    s += "  achieved         " + fixed(r.achieved_gflops, 1) + " GFLOP/s (" +
         fixed(r.flops_per_step / 1e9, 1) + " GFLOP per step)\n";
  }
  if (r.gemm_peak_gflops > 0) {
    s += "  GEMM peak        " + fixed(r.gemm_peak_gflops, 1) + " GFLOP/s (2048^3, same format)\n";
    if (r.flops_per_step > 0) s += "  MFU              " + fixed(100.0 * r.mfu(), 1) + " %\n";
  }
  if (r.parameters > 0) {
    const double n = static_cast<double>(r.parameters);
    const TrainingStateBytes& b = r.state;
    s += "  training state   " + fixed(static_cast<double>(b.total()) / n, 2) +
         " bytes/parameter (weights " + fixed(static_cast<double>(b.weights) / n, 2) +
         ", gradients " + fixed(static_cast<double>(b.gradients) / n, 2) + ", optimizer " +
         fixed(static_cast<double>(b.optimizer) / n, 2) + ", copies " +
         fixed(static_cast<double>(b.copies) / n, 2) + "; " + r.training_state + ")\n";
  }
  if (r.interleaved) {
    s += "  peak RSS         not measured (interleaved runs share one process; run each alone)\n";
  } else {
    s += "  peak RSS         " + fixed(r.peak_rss_mib, 0) +
         " MiB (tensors: " + fixed(r.peak_tensor_mib, 0) + " MiB live at most, " +
         fixed(r.pool_mib, 0) + " MiB pooled)\n";
  }
  if (!r.losses.empty()) {
    s += "  loss             " + fixed(r.losses.front(), 4) + " (step 1) -> " +
         fixed(r.losses.back(), 4) + " (step " + std::to_string(r.losses.size()) + ")\n";
  }
  if (r.profile) {
    const double steps = static_cast<double>(r.step_seconds.size());
    const double per_step_ms = r.profiled_seconds / steps * 1e3;
    s += "\n  time per step by op class (ms; exclusive, nested scopes subtracted)\n";
    char line[160];
    std::snprintf(line, sizeof(line), "  %-20s %9s %9s %9s %9s %6s\n", "class", "forward",
                  "backward", "step", "total", "%");
    s += line;
    double accounted = 0;
    for (int c = 0; c < kernels::kOpClassCount; ++c) {
      double row[kernels::kPhaseCount];
      double total = 0;
      for (int p = 0; p < kernels::kPhaseCount; ++p) {
        row[p] = (*r.profile)[p][c] / steps * 1e3;
        total += row[p];
      }
      accounted += total;
      if (total < 0.05) continue;
      std::snprintf(line, sizeof(line), "  %-20s %9.1f %9.1f %9.1f %9.1f %6.1f\n",
                    kernels::name(static_cast<kernels::OpClass>(c)), row[0], row[1], row[2], total,
                    100.0 * total / per_step_ms);
      s += line;
    }
    std::snprintf(line, sizeof(line), "  %-20s %9s %9s %9s %9.1f %6.1f\n", "other (unscoped)", "",
                  "", "", per_step_ms - accounted, 100.0 * (per_step_ms - accounted) / per_step_ms);
    s += line;
    std::snprintf(line, sizeof(line), "  %-20s %9s %9s %9s %9.1f\n", "step total", "", "", "",
                  per_step_ms);
    s += line;
  }
  return s;
}

std::string bench_result_json(const BenchResult& r) {
  nlohmann::json j{{"model", r.model},
                   {"precision", r.precision},
                   {"route", r.route},
                   {"parameters", r.parameters},
                   {"unit", r.unit},
                   {"items_per_step", r.items_per_step},
                   {"median_step_ms", r.median_seconds * 1e3},
                   {"items_per_s", r.items_per_second},
                   {"gflops", r.achieved_gflops},
                   {"gemm_peak_gflops", r.gemm_peak_gflops},
                   {"mfu", r.mfu()},
                   {"peak_rss_mib", r.peak_rss_mib},
                   {"peak_tensor_mib", r.peak_tensor_mib},
                   {"pool_mib", r.pool_mib},
                   {"ranks", r.ranks},
                   {"interleaved", r.interleaved},
                   {"training_state", r.training_state},
                   {"state_bytes",
                    {{"weights", r.state.weights},
                     {"gradients", r.state.gradients},
                     {"optimizer", r.state.optimizer},
                     {"copies", r.state.copies}}},
                   {"step_ms", nlohmann::json::array()},
                   {"losses", r.losses}};
  for (double s : r.step_seconds) j["step_ms"].push_back(s * 1e3);
  if (r.ranks > 1) {
    j["allreduce"] = r.allreduce;
    j["buckets"] = r.buckets;
    j["bytes_sent_per_step"] = r.bytes_sent_per_step;
    j["median_allreduce_wait_ms"] = r.median_allreduce_wait_seconds * 1e3;
  }
  if (r.profile) {
    nlohmann::json p;
    for (int c = 0; c < kernels::kOpClassCount; ++c) {
      for (int ph = 0; ph < kernels::kPhaseCount; ++ph) {
        p[kernels::name(static_cast<kernels::OpClass>(c))]
         [kernels::name(static_cast<kernels::Phase>(ph))] = (*r.profile)[ph][c] * 1e3;
      }
    }
    j["profile_ms_total"] = p;
  }
  return j.dump();
}

}  // namespace mantissa::bench
