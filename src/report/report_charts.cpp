// The report's charts, built from the runs' records (report_parts.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report_parts.hpp"
#include "support/number_text.hpp"

namespace mantissa::report::detail {
namespace {

using plot::Draw;
using plot::LineChart;
using plot::Scale;
using plot::Series;
using Points = std::vector<std::pair<double, double>>;

constexpr const char* kStepAxis = "optimizer step";
// Fewer logged points than this in a curve: the caption says so.
constexpr std::size_t kFewPoints = 10;

std::string figure(const std::string& svg, const std::string& caption) {
  return "<figure>" + svg + "<figcaption>" + caption + "</figcaption></figure>\n";
}

plot::LegendEntry legend_of(const ReportRun& r) {
  return {r.label, r.style, true};
}

LineChart chart(std::string id, std::string title, plot::Axis y) {
  LineChart c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.x = {kStepAxis, Scale::linear, /*include_zero=*/true};
  c.y = std::move(y);
  return c;
}

Series series(const ReportRun& r, std::string kind, Draw draw, Points points) {
  Series s;
  s.run = r.label;
  s.kind = std::move(kind);
  s.style = r.style;
  s.draw = draw;
  s.points = std::move(points);
  return s;
}

// A value per step relative to `base` (0 when none): the mean as points, and (several seeds)
// the lowest and highest as a band or ranges. `base` maps steps to what is subtracted; steps
// it lacks are left out.
struct Drawn {
  Points mean, low;
  std::vector<double> high;
};
Drawn drawn(const std::vector<StepSpread>& values, const std::map<double, double>* base) {
  Drawn d;
  for (const StepSpread& v : values) {
    double b = 0;
    if (base != nullptr) {
      const auto it = base->find(v.step);
      if (it == base->end()) continue;
      b = it->second;
    }
    d.mean.emplace_back(v.step, v.value.mean - b);
    d.low.emplace_back(v.step, v.value.lo - b);
    d.high.push_back(v.value.hi - b);
  }
  return d;
}

// The series of one run's value: its mean (`draw`), and with several seeds their range (a
// band under a line, whiskers through markers), kind "<kind> range".
void add_series(LineChart& c, const ReportRun& r, const std::string& kind, Draw draw,
                const Drawn& d) {
  if (r.seeds() > 1) {
    Series range =
        series(r, kind + " range", draw == Draw::markers ? Draw::ranges : Draw::band, d.low);
    range.upper = d.high;
    c.series.push_back(std::move(range));
  }
  c.series.push_back(series(r, kind, draw, d.mean));
}

std::map<double, double> means(const std::vector<StepSpread>& values) {
  std::map<double, double> m;
  for (const StepSpread& v : values) m[v.step] = v.value.mean;
  return m;
}

double train_loss(const WindowRecord& w) {
  return w.loss;
}
double eval_loss(const EvalRecord& e) {
  return e.loss;
}

// What the captions say about seeds and about curves of few points.
// Said only when true: one seed (and so the same batches) in every run; else the seeds.
std::string same_batches_note(const std::vector<ReportRun>& runs) {
  std::set<std::uint64_t> seeds;
  for (const ReportRun& r : runs) {
    if (r.seeds() > 1) return "";  // grouped seeds: seeds_note says how they are drawn
    for (const RunLog* l : r.logs) seeds.insert(l->run.seed);
  }
  if (seeds.size() <= 1) return " Same seed and batches in every run.";
  std::string list;
  for (const std::uint64_t s : seeds) list += (list.empty() ? "" : ", ") + std::to_string(s);
  return " The runs have different seeds (" + list +
         "): their differences include run-to-run noise.";
}

std::string seeds_note(const std::vector<ReportRun>& runs) {
  std::size_t most = 1;
  for (const ReportRun& r : runs) most = std::max(most, r.seeds());
  if (most == 1) return "";
  return " Several seeds: the line is their mean, the shaded band (whiskers on markers) spans "
         "the lowest to the highest seed: run-to-run noise to judge a difference by.";
}

// Whether a run logged each of its steps (a record per step from its start on).
bool every_step_logged(const RunLog& l) {
  std::int64_t previous = l.run.start_step;
  for (const WindowRecord& w : l.windows) {
    if (w.step - 1 != previous) return false;  // (previous may be 2^63 - 1: no + 1)
    previous = w.step;
  }
  return true;
}

// Said when a run logged fewer than kFewPoints points and not every step: its curves are
// coarser than its run.
std::string few_points_note(const std::vector<ReportRun>& runs) {
  std::size_t fewest = 0;
  bool any = false;
  for (const ReportRun& r : runs) {
    for (const RunLog* l : r.logs) {
      if (every_step_logged(*l) || (any && l->windows.size() >= fewest)) continue;
      fewest = l->windows.size();
      any = true;
    }
  }
  if (!any || fewest >= kFewPoints) return "";
  return fmt::format(
      " A curve here has only {} logged point{} (one per logging.log_steps steps): `mantissa "
      "compare` logs every step of short runs.",
      fewest, fewest == 1 ? "" : "s");
}

std::string loss_chart(const std::vector<ReportRun>& runs) {
  LineChart c = chart("chart-loss", "Loss", {"cross-entropy loss"});
  for (const ReportRun& r : runs) {
    c.legend.push_back(legend_of(r));
    add_series(c, r, "training", Draw::line, drawn(window_spread(r, train_loss), nullptr));
    add_series(c, r, "validation", Draw::markers, drawn(eval_spread(r, eval_loss), nullptr));
  }
  return figure(plot::render(c),
                "Lines: training loss (the mean over each logging window). Markers: validation "
                "loss." +
                    same_batches_note(runs) + seeds_note(runs) + few_points_note(runs));
}

std::string difference_chart(const std::vector<ReportRun>& runs) {
  const ReportRun* ref = reference_run(runs);
  LineChart c =
      chart("chart-difference", ref ? "Loss minus " + ref->label + "'s" : "Loss difference",
            {"loss difference", Scale::linear, true});
  c.empty_text = ref ? "no other run to compare" : "no float32 run to compare with";
  std::string caption =
      "Each run's loss minus the float32 run's at the same step (lines: training, markers: "
      "validation). Above zero: worse than float32.";
  if (ref != nullptr) {
    c.reference_y = 0.0;
    c.reference_label = ref->label + " (reference)";
    const std::vector<StepSpread> ref_train = window_spread(*ref, train_loss);
    const std::vector<StepSpread> ref_eval = eval_spread(*ref, eval_loss);
    const std::map<double, double> base_train = means(ref_train), base_eval = means(ref_eval);
    if (ref->seeds() > 1) {  // the reference's own seeds about their mean: the noise floor
      c.legend.push_back(legend_of(*ref));
      Drawn d = drawn(ref_train, &base_train);
      Series band = series(*ref, "training range", Draw::band, d.low);
      band.upper = d.high;
      c.series.push_back(std::move(band));
      caption +=
          " The band about zero: " + plot::escape(ref->label) + "'s own seeds about their mean.";
    }
    for (const ReportRun& r : runs) {
      if (&r == ref) continue;
      c.legend.push_back(legend_of(r));
      add_series(c, r, "training", Draw::line, drawn(window_spread(r, train_loss), &base_train));
      add_series(c, r, "validation", Draw::markers, drawn(eval_spread(r, eval_loss), &base_eval));
    }
  }
  return figure(plot::render(c), caption + seeds_note(runs));
}

// "a, b, c", escaped.
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return plot::escape(out);
}

// One seed's loss-scale line and skipped-step crosses; false when it draws nothing.
bool add_scale_series(LineChart& c, const ReportRun& r, const RunLog& log) {
  // The scale each logged or skipped step used, held back to the previous such step. A run
  // whose step records carry no scale (log_loss_scale false) gets no line: its skipped steps
  // alone would draw a scale it did not record.
  std::map<double, double> at;
  for (const WindowRecord& w : log.windows) {
    if (w.loss_scale) at[static_cast<double>(w.step)] = *w.loss_scale;
  }
  const bool logged = !at.empty();
  Points skipped;
  for (const SkipRecord& s : log.skips) {
    if (logged) at[static_cast<double>(s.step)] = s.loss_scale;
    skipped.emplace_back(static_cast<double>(s.step), s.loss_scale);
  }
  if (!logged && skipped.empty()) return logged;
  if (logged) {
    c.series.push_back(series(r, "loss scale", Draw::staircase, Points(at.begin(), at.end())));
  }
  Series marks = series(r, "skipped", Draw::markers, std::move(skipped));
  marks.style.marker = plot::Marker::cross;
  c.series.push_back(marks);
  return logged;
}

std::string loss_scale_chart(const std::vector<ReportRun>& runs) {
  LineChart c = chart("chart-loss-scale", "Loss scale", {"loss scale", Scale::log2});
  c.empty_text = "no run records a loss scale";
  std::vector<std::string> unscaled, unlogged, fell_back;
  for (const ReportRun& r : runs) {
    if (r.log->run.loss_scaling == LossScalingMode::none && r.log->fallbacks.empty()) {
      unscaled.push_back(r.label);
      continue;
    }
    const std::size_t before = c.series.size();
    bool logged = false;
    for (const RunLog* l : r.logs) logged = add_scale_series(c, r, *l) || logged;
    if (!logged) unlogged.push_back(r.label);
    if (c.series.size() > before) c.legend.push_back(legend_of(r));
    for (const RunLog* l : r.logs) {
      for (const FallbackRecord& f : l->fallbacks)
        fell_back.push_back(fmt::format("{} after step {}", r.label, f.step));
    }
  }
  c.legend.push_back({"skipped step", {"#000000", "", plot::Marker::cross}, false});
  std::string caption =
      "The scale each step used; a cross marks each skipped step (non-finite gradients: the "
      "step changes nothing, and the scale is multiplied by backoff_factor unless hysteresis "
      "or overflow_tolerance lets the overflow pass).";
  if (!fell_back.empty()) {
    caption += " Fell back to bfloat16 without loss scaling (on_stuck: fall_back): " +
               name_list(fell_back) + ".";
  }
  if (!unscaled.empty()) caption += " Not scaled: " + name_list(unscaled) + ".";
  if (!unlogged.empty()) {
    caption += " Scale not recorded (log_loss_scale false; only skipped steps shown): " +
               name_list(unlogged) + ".";
  }
  return figure(plot::render(c), caption);
}

template <class Value>
std::string per_window_chart(const std::vector<ReportRun>& runs, const char* id, const char* title,
                             plot::Axis y, Value value, const std::string& caption) {
  LineChart c = chart(id, title, std::move(y));
  for (const ReportRun& r : runs) {
    c.legend.push_back(legend_of(r));
    add_series(c, r, "training", Draw::line, drawn(window_spread(r, value), nullptr));
  }
  return figure(plot::render(c), caption + seeds_note(runs));
}

// Throughput bars only from interleaved measurements; without them, why there are none.
std::string throughput_figure(const std::vector<ReportRun>& runs) {
  plot::BarChart speed{"chart-throughput", "Throughput (interleaved)", {}};
  std::vector<std::string> missing;
  for (const ReportRun& r : runs) {
    if (r.throughput == nullptr) {
      missing.push_back(r.label);
      continue;
    }
    const ThroughputRecord& t = *r.throughput;
    speed.bars.push_back({r.label, r.label, rate_text(t.items_per_second, t.unit),
                          t.items_per_second, r.style, plot::Range{t.slowest, t.fastest}});
  }
  if (speed.bars.empty()) {
    return "<figure id=\"no-throughput\"><p class=\"note\"><b>No throughput comparison.</b> "
           "These runs trained one after another, each alone in its own process, so their "
           "speeds measure whatever else the machine was doing at the time as much as the "
           "format. <code>mantissa compare</code> measures the formats interleaved in one "
           "process, step by step in turn (<code>--throughput-steps</code>); <code>mantissa "
           "report --throughput FILE</code> draws such a file. Each run's own figure is in the "
           "table of final metrics, marked &dagger;.</p></figure>\n";
  }
  std::string caption =
      "Throughput measured interleaved: every format's training steps in one process, step by "
      "step in turn, so that each saw the same machine (the median step; the whisker spans the "
      "slowest and fastest step).";
  if (!missing.empty()) caption += " Not measured interleaved: " + name_list(missing) + ".";
  return figure(plot::render(speed), caption);
}

std::string memory_figure(const std::vector<ReportRun>& runs) {
  plot::BarChart memory{"chart-memory", "Peak resident memory", {}};
  for (const ReportRun& r : runs) {
    const std::optional<double> rss = peak_rss(r);
    memory.bars.push_back({r.label, r.label, rss ? fmt::format("{:.0f} MiB", *rss) : "n/a",
                           rss.value_or(0.0), r.style, std::nullopt});
  }
  return figure(plot::render(memory),
                "Peak RSS: the training process's high-water mark (each run in its own process "
                "under mantissa compare; the highest of a run's seeds).");
}

}  // namespace

std::string charts_section(const std::vector<ReportRun>& runs) {
  std::string out = "<div class=\"charts\">\n";
  out += loss_chart(runs);
  out += difference_chart(runs);
  out += loss_scale_chart(runs);
  out += per_window_chart(
      runs, "chart-grad-norm", "Gradient norm", {"global L2 norm", Scale::log10},
      [](const WindowRecord& w) { return w.grad_norm; },
      "The global gradient norm, unscaled and before clipping, of each window's last step (a "
      "gap: not finite, the step was skipped).");
  out += per_window_chart(
      runs, "chart-learning-rate", "Learning rate", {"learning rate", Scale::linear, true},
      [](const WindowRecord& w) { return w.learning_rate; },
      "The schedule's value for the next step; a skipped step does not advance it.");
  out += throughput_figure(runs);
  out += memory_figure(runs);
  return out + "</div>\n";
}

}  // namespace mantissa::report::detail
