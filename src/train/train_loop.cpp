// The Trainer's training loop (trainer.hpp): the steps, their logging windows, the periodic
// evaluations and checkpoints, the records of skipped steps, routes and fall-backs, and the
// end record of how the run ended.
#include <chrono>
#include <map>

#include "data_parallel.hpp"
#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/trainer.hpp"
#include "run_dir.hpp"
#include "run_outcome.hpp"
#include "support/machine.hpp"
#include "task.hpp"

namespace mantissa::train {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Trainer::record_new_routes() {
  const std::vector<kernels::RouteRecord> routes = kernels::route_records();
  if (routes.size() == routes_recorded_) return;
  if (routes_recorded_ == 0) {
    std::map<std::string, int> by_route, by_source;
    for (const kernels::RouteRecord& r : routes) {
      ++by_route[std::string(precision::route_name(r.route))];
      ++by_source[std::string(name_of(kernels::kRouteSourceNames, r.source))];
    }
    std::string line = "matrix products: " + std::to_string(routes.size()) + " shapes on routes";
    for (const auto& [route, n] : by_route) line += " " + route + " x" + std::to_string(n);
    line += " (";
    for (const auto& [source, n] : by_source) {
      line += (line.back() == '(' ? "" : ", ") + std::to_string(n) + " " + source;
    }
    line += "; each shape's rates in metrics.jsonl)";
    // A route cache that is off or had trouble (its directory a file, unreadable lines, a
    // lock held) is said here: every run would otherwise measure again without a word.
    const kernels::RouteCacheStatus cache = kernels::route_cache_status();
    if (!cache.note.empty()) line += "; route cache " + cache.note;
    log(line);
  }
  const std::vector<int> same = detail::same_bits_levels(policy_, has_attention(), routes);
  if (routes_recorded_ == 0 && !same.empty() &&
      detail::same_bits_levels(policy_, has_attention(), {}).empty()) {
    log("every " + std::string(numerics::name(policy_.half)) +
        " product so far took an fp32 route: precision_opt_level " +
        std::to_string(policy_.opt_level) + " computes " +
        precision::same_bits_note(policy_.half, same) +
        "; under automatic another level measures its own routes (precision.matmul_route: "
        "fp32 makes them the same)");
  }
  routes_recorded_ = routes.size();
  write_metrics(report::metrics_line(report::RoutesRecord{global_step_, routes, same}));
}

RunSummary Trainer::train_loop(RunMode mode) {
  log("training " + std::string(name_of(config::kModelNames, config_.model.kind)) + " (" +
      std::to_string(task_->module().parameter_count()) + " parameters), precision " +
      precision_text() + ", " + optimizer_->name() + ", lr " + config_.schedule_text +
      ", run directory " + run_dir_);
  for (const std::string& line : quant_->describe_plan()) log("linear layers: " + line);
  if (const dist::ReducerStats* st = dp_->stats()) {
    const std::int64_t global = config_.train_data.batch_size;
    log("data parallel over " + std::to_string(dp_->size()) +
        " processes: " + std::to_string(global / dp_->size()) + " of every global batch of " +
        std::to_string(global) + " each; gradients summed in " + std::to_string(st->buckets) +
        " bucket" + (st->buckets == 1 ? "" : "s") + " over a " +
        std::string(name_of(dist::kWireFormatNames, config_.dist.allreduce_dtype)) + " wire" +
        (config_.dist.overlap ? ", started during the backward" : ", after the backward"));
  }
  if (const std::vector<int> same = detail::same_bits_levels(policy_, has_attention(), {});
      !same.empty()) {
    log("precision_opt_level " + std::to_string(policy_.opt_level) + " computes " +
        precision::same_bits_note(policy_.half, same));
  }
  const std::int64_t eval_every =
      mode == RunMode::train_and_eval ? config_.loop.eval_interval() : 0;
  if (mode == RunMode::train_and_eval && eval_every == 0) {
    log("eval_frequency is 0: no validation while training");
  }
  RunSummary summary;
  std::int64_t saved_at = -1;  // the step the last periodic checkpoint holds
  try {
    write_metrics(report::metrics_line(run_record()));
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
  } catch (const amp::StepGuardError& e) {
    record_end(detail::outcome_of(e.why()), summary, e.what(), true);
    throw;
  } catch (const std::exception& e) {
    record_end(report::RunOutcome::error, summary, e.what(), true);
    throw;
  }
  try {
    if (saved_at != global_step_) summary.last_checkpoint = save_checkpoint_now();
    log("checkpoint " + summary.last_checkpoint + (summary.interrupted ? " (interrupted)" : ""));
    if (eval_every > 0 && !summary.interrupted) {
      events_->evaluating(global_step_);
      summary.eval = evaluate();
    }
  } catch (const std::exception& e) {
    record_end(report::RunOutcome::error, summary, e.what(), true);
    throw;
  }
  summary.global_step = global_step_;
  summary.skipped_steps = scaler_->num_skipped_steps();
  record_end(summary.interrupted ? report::RunOutcome::interrupted : report::RunOutcome::completed,
             summary, "", false);
  return summary;
}

void Trainer::record_skip(std::int64_t step, double loss_scale, std::vector<std::string> tensors,
                          std::optional<autograd::NonfiniteOrigin> first_nonfinite) {
  last_skipped_step_ = step;
  write_metrics(report::metrics_line(
      report::SkipRecord{step, loss_scale, std::move(tensors), std::move(first_nonfinite)}));
}

void Trainer::record_end(report::RunOutcome outcome, const RunSummary& summary,
                         const std::string& message, bool best_effort) {
  report::OutcomeRecord r{global_step_,
                          outcome,
                          scaler_->num_skipped_steps(),
                          last_skipped_step_,
                          signal_name(summary.stop_signal),
                          summary.last_checkpoint,
                          message};
  try {
    write_metrics(report::metrics_line(r));
  } catch (const Error&) {
    if (!best_effort) throw;
  }
}

void Trainer::train_steps(RunSummary& summary, std::int64_t eval_every, std::int64_t& saved_at) {
  auto window_start = Clock::now();
  const auto run_start = window_start;
  std::int64_t window_items = 0, start_step = global_step_, refused = 0;
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  while (global_step_ < config_.loop.max_steps) {
    if (dp_->any(stop_requested())) {  // every process stops after the same step
      summary.interrupted = true;
      summary.stop_signal = dp_->first_nonzero(stop_signal_ ? stop_signal_->load() : 0);
      break;
    }
    StepResult result;
    try {
      result = train_step();
    } catch (const amp::StepGuardError& e) {
      // The step that stopped the run was taken and skipped: it is counted, said and recorded
      // as every skipped step is (its batch was read).
      ++global_step_;
      log(detail::skipped_step_line(global_step_, e));
      record_skip(global_step_, e.loss_scale(), e.tensors(), e.first_nonfinite());
      throw;
    }
    const auto& [step_loss, report, fallback] = result;
    record_new_routes();
    refused += report.refused_update.empty() ? 0 : 1;
    if (!report.stepped) {
      record_skip(global_step_, report.loss_scale,
                  report.refused_update.empty() ? report.nonfinite_params
                                                : std::vector<std::string>{report.refused_update},
                  report.nonfinite_origin);
    }
    if (fallback) write_metrics(report::metrics_line(*fallback));
    if (refused > 0 && refused == global_step_ - start_step &&
        global_step_ == config_.loop.max_steps) {
      throw amp::StepGuardError(
          amp::GuardStop::nonfinite_steps,
          "no step of this run was applied: every update would have made '" +
              report.refused_update +
              "' non-finite (inf or NaN) with finite gradients; the learning rate, weight "
              "decay or eps make the optimizer diverge: lower them",
          report.loss_scale, {report.refused_update}, /*refused_update=*/true);
    }
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
      if (scales_loss_) p.loss_scale = report.loss_scale;
      // The rate of the next step; after the run's last step, of that step (schedules are
      // checked, and may be defined, only up to it: OneCycle's total_steps).
      p.learning_rate = optimizer_->learning_rate_at(
          std::min(optimizer_->step_index(), config_.loop.max_steps - 1));
      p.grad_norm = report.grad_norm;
      p.skipped_steps = report.skipped_steps;
      p.items_per_second = static_cast<double>(window_items) / std::max(secs, 1e-9);
      p.unit = task_->unit();
      p.eta_seconds = elapsed / done * static_cast<double>(config_.loop.max_steps - global_step_);
      const std::optional<double> logged_scale =
          config_.precision.logs_loss_scale() ? p.loss_scale : std::nullopt;
      report::WindowRecord w{
          p.step,          p.loss,      p.learning_rate,    logged_scale,
          p.skipped_steps, p.grad_norm, p.items_per_second, support::peak_rss_mib(),
          std::nullopt};
      if (!quant_->empty()) w.fp8 = quant_->take_window();
      write_metrics(report::metrics_line(w, p.unit));
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
      // The run's last checkpoint is said when the run ends.
      if (global_step_ < config_.loop.max_steps && !summary.interrupted) {
        log("checkpoint " + summary.last_checkpoint);
      }
    }
    window_start += Clock::now() - pause_start;  // throughput counts training time only
  }
}

}  // namespace mantissa::train
