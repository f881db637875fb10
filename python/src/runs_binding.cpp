// Runs from Python: the trainer in-process (progress and messages through Python callables),
// a run directory's metrics.jsonl as Python objects (report/metrics.hpp's reader), and the
// precision report written to a file. The trainer runs with the GIL released; callbacks take
// it back. A Ctrl-C pending at a trainer event (seen there whether or not a callback is given)
// asks the run to checkpoint and stop at the next step boundary, as SIGINT does to
// `mantissa train`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "bible_corpus.hpp"
#include "bindings.hpp"
#include "mantissa/names.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/trainer.hpp"
#include "report_output.hpp"
#include "run_config.hpp"

namespace py = pybind11;

namespace mantissa::python {
namespace {

py::object optional_number(const std::optional<double>& v) {
  return v ? py::object(py::float_(*v)) : py::object(py::none());
}

py::dict progress_dict(const train::Progress& p) {
  py::dict d;
  d["step"] = p.step;
  d["max_steps"] = p.max_steps;
  d["loss"] = p.loss;
  d["loss_scale"] = optional_number(p.loss_scale);
  d["learning_rate"] = p.learning_rate;
  d["grad_norm"] = p.grad_norm;
  d["skipped_steps"] = p.skipped_steps;
  d["items_per_second"] = p.items_per_second;
  d["unit"] = std::string(p.unit);
  d["eta_seconds"] = p.eta_seconds;
  return d;
}

py::dict eval_dict(const train::EvalResult& r) {
  py::dict d;
  d["loss"] = r.loss;
  if (r.text) {
    d["perplexity"] = r.perplexity;
  } else {
    d["accuracy"] = r.accuracy;
  }
  d["batches"] = r.steps;
  return d;
}

// Trainer events to Python callables (either may be None).
class PythonEvents : public train::TrainerEvents {
 public:
  PythonEvents(py::object progress, py::object message, std::atomic<bool>& stop,
               std::atomic<int>& stop_signal)
      : progress_(std::move(progress)),
        message_(std::move(message)),
        stop_(stop),
        stop_signal_(stop_signal) {}

  void message(const std::string& line) override {
    py::gil_scoped_acquire gil;
    check_signals();
    if (!message_.is_none()) message_(line);
  }
  void progress(const train::Progress& p) override {
    py::gil_scoped_acquire gil;
    check_signals();
    if (!progress_.is_none()) progress_(progress_dict(p));
  }
  bool interrupted() const { return interrupted_; }

 private:
  // A KeyboardInterrupt pending in Python becomes a stop request (handled at the next step
  // boundary: checkpoint, return); train() raises it afterwards.
  void check_signals() {
    if (PyErr_CheckSignals() != 0) {
      // Python's own SIGINT handler raised it: the end record names the signal.
      if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) stop_signal_.store(SIGINT);
      PyErr_Clear();
      interrupted_ = true;
      stop_.store(true);
    }
  }

  py::object progress_, message_;
  std::atomic<bool>& stop_;
  std::atomic<int>& stop_signal_;
  bool interrupted_ = false;
};

py::dict train_run(const std::string& config_path, const std::vector<std::string>& overrides,
                   const std::string& mode_word, const std::optional<std::string>& resume,
                   py::object progress, py::object message) {
  const train::RunMode mode = parse_named(train::kRunModeNames, mode_word, "mode");
  const config::TrainerConfig config = app::load_run_config(config_path, overrides);
  std::atomic<bool> stop{false};
  std::atomic<int> stop_signal{0};
  PythonEvents events(std::move(progress), std::move(message), stop, stop_signal);
  train::RunSummary s;
  std::string run_dir;
  {
    py::gil_scoped_release unlocked;
    train::Trainer trainer(config, {&events, app::bible_kjv_text, {}, &stop, &stop_signal});
    const train::ResumeFrom from =
        resume ? train::parse_resume(*resume, "resume")
               : (mode == train::RunMode::eval ? train::ResumeFrom::latest() : train::ResumeFrom{});
    s = trainer.run(mode, from);
    run_dir = trainer.run_dir();
  }
  py::dict d;
  d["run_dir"] = run_dir;
  d["global_step"] = s.global_step;
  d["skipped_steps"] = s.skipped_steps;
  d["last_loss"] = s.last_loss;
  d["eval"] = s.eval ? py::object(eval_dict(*s.eval)) : py::object(py::none());
  py::list evals, unusable;  // eval_all: every checkpoint's, and those it could not evaluate
  for (const train::CheckpointEval& e : s.evals) {
    py::dict one;
    one["checkpoint"] = e.checkpoint;
    one["step"] = e.step;
    one["eval"] = eval_dict(e.result);
    evals.append(one);
  }
  for (const train::UnusableCheckpoint& u : s.unusable) {
    py::dict one;
    one["checkpoint"] = u.checkpoint;
    one["error"] = u.error;
    unusable.append(one);
  }
  d["evals"] = evals;
  d["unusable"] = unusable;
  d["last_checkpoint"] = s.last_checkpoint;
  d["interrupted"] = s.interrupted;
  d["keyboard_interrupt"] = events.interrupted();
  return d;
}

py::dict run_record_dict(const report::RunRecord& r) {
  py::dict d;
  d["format"] = std::string(numerics::name(r.format));
  d["fp8"] = r.fp8;
  d["loss_scaling"] = std::string(name_of(report::kLossScalingModeNames, r.loss_scaling));
  d["model"] = r.model;
  d["parameters"] = r.parameters;
  d["unit"] = r.unit;
  d["items_per_step"] = r.items_per_step;
  d["start_step"] = r.start_step;
  d["max_steps"] = r.max_steps;
  d["seed"] = r.seed;
  d["cpu"] = r.cpu;
  py::dict settings;
  for (const auto& [name, value] : r.settings) settings[py::str(name)] = value;
  d["settings"] = settings;
  d["recipe"] = r.recipe.empty() ? py::object(py::none()) : py::object(py::str(r.recipe));
  py::list layers;
  for (const auto& [layer, what] : r.layers) layers.append(py::make_tuple(layer, what));
  d["layers"] = layers;
  d["same_bits_opt_levels"] = r.same_bits_opt_levels;
  return d;
}

py::dict fallback_dict(const report::FallbackRecord& f) {
  py::dict d;
  d["step"] = f.step;
  d["from"] = std::string(numerics::name(f.from));
  d["to"] = std::string(numerics::name(f.to));
  d["reason"] = f.reason;
  return d;
}

// How the run ended, with outcome_text's words; None when no end record was written.
py::object outcome_dict(const report::RunLog& log) {
  if (!log.outcome) return py::none();
  const report::OutcomeRecord& o = *log.outcome;
  py::dict d;
  d["step"] = o.step;
  d["outcome"] = std::string(name_of(report::kRunOutcomeNames, o.outcome));
  d["skipped_steps"] = o.skipped_steps;
  d["last_skipped_step"] =
      o.last_skipped_step ? py::object(py::int_(*o.last_skipped_step)) : py::none();
  d["signal"] = o.signal;
  d["checkpoint"] = o.checkpoint;
  d["message"] = o.message;
  d["text"] = report::outcome_text(log);
  return d;
}

py::dict window_dict(const report::WindowRecord& w) {
  py::dict d;
  d["step"] = w.step;
  d["loss"] = w.loss;
  d["learning_rate"] = w.learning_rate;
  d["loss_scale"] = optional_number(w.loss_scale);
  d["skipped_steps"] = w.skipped_steps;
  d["grad_norm"] = w.grad_norm;
  d["items_per_second"] = w.items_per_second;
  d["peak_rss_mib"] = optional_number(w.peak_rss_mib);
  if (w.fp8) {
    d["fp8_overflows"] = w.fp8->overflows;
    d["fp8_underflows"] = w.fp8->underflows;
    py::dict tensors;
    for (const precision::Fp8TensorCounts& t : w.fp8->tensors) {
      py::dict c;
      c["overflows"] = t.overflows;
      c["underflows"] = t.underflows;
      tensors[py::str(t.tensor)] = c;
    }
    d["fp8_tensors"] = tensors;
  }
  return d;
}

py::dict eval_record_dict(const report::EvalRecord& e) {
  py::dict d;
  d["step"] = e.step;
  d["loss"] = e.loss;
  d["perplexity"] = optional_number(e.perplexity);
  d["accuracy"] = optional_number(e.accuracy);
  d["batches"] = e.batches;
  return d;
}

py::dict skip_record_dict(const report::SkipRecord& s) {
  py::dict d;
  d["step"] = s.step;
  d["loss_scale"] = s.loss_scale;
  d["overflowed"] = s.overflowed;
  py::object origin = py::none();
  if (s.first_nonfinite) {
    py::dict o;
    o["op"] = s.first_nonfinite->op;
    o["layer"] = s.first_nonfinite->layer;
    o["gradient"] =
        std::string(name_of(autograd::kNonfiniteGradientNames, s.first_nonfinite->gradient));
    origin = o;
  }
  d["first_nonfinite"] = origin;
  return d;
}

// One row per sampled step and rounding site: a flat table (a DataFrame's rows).
void append_precision_rows(py::list& rows, const report::PrecisionStatsRecord& r) {
  for (const report::PrecisionSite& s : r.sites) {
    py::dict d;
    d["step"] = r.step;
    d["layer"] = s.layer;
    d["op"] = s.op;
    d["role"] = std::string(name_of(precision::kQuantRoleNames, s.role));
    d["format"] = std::string(numerics::name(s.format));
    d["elements"] = s.counts.elements;
    d["flushed"] = s.counts.flushed;
    d["subnormal"] = s.counts.subnormal;
    d["saturated"] = s.counts.saturated;
    d["overflowed"] = s.counts.overflowed;
    d["nonfinite"] = s.counts.nonfinite;
    d["snr_db"] = optional_number(s.snr_db);
    d["scale_min"] = optional_number(s.scale ? std::optional<double>(s.scale->min) : std::nullopt);
    d["scale_max"] = optional_number(s.scale ? std::optional<double>(s.scale->max) : std::nullopt);
    rows.append(d);
  }
}

py::dict read_run_log(const std::string& run_dir) {
  report::RunLog log;
  {
    py::gil_scoped_release unlocked;
    log = report::read_run_log(run_dir);
  }
  py::dict d;
  d["source"] = log.source;
  d["run"] = run_record_dict(log.run);
  py::list windows, evals, skips, precision;
  for (const auto& w : log.windows) windows.append(window_dict(w));
  for (const auto& e : log.evals) evals.append(eval_record_dict(e));
  for (const auto& s : log.skips) skips.append(skip_record_dict(s));
  for (const auto& r : log.precision_stats) append_precision_rows(precision, r);
  d["windows"] = windows;
  d["evals"] = evals;
  d["skips"] = skips;
  d["precision_stats"] = precision;
  py::list fallbacks;
  for (const auto& f : log.fallbacks) fallbacks.append(fallback_dict(f));
  d["fallbacks"] = fallbacks;
  d["outcome"] = outcome_dict(log);
  d["label"] = report::format_label(log);
  return d;
}

void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const std::optional<std::string>& title, const std::string& subtitle,
                  const std::optional<std::string>& throughput, bool group_seeds) {
  report::ReportOptions options;
  if (title) options.title = *title;
  options.subtitle = subtitle;
  options.group_seeds = group_seeds;
  py::gil_scoped_release unlocked;
  if (throughput) options.throughput = report::read_throughput(*throughput);
  app::write_report(run_dirs, out, options);
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def("train", &train_run, py::arg("config_path"), py::arg("overrides"), py::arg("mode"),
        py::arg("resume"), py::arg("progress"), py::arg("message"));
  m.def("read_run_log", &read_run_log, py::arg("run_dir"));
  m.def("write_report", &write_report, py::arg("run_dirs"), py::arg("out"), py::arg("title"),
        py::arg("subtitle"), py::arg("throughput"), py::arg("group_seeds"));
}

}  // namespace mantissa::python
