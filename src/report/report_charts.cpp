// The report's charts, built from the runs' records (report_parts.hpp).
#include <algorithm>
#include <cmath>
#include <map>

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

Series series(const ReportRun& r, const char* kind, Draw draw, Points points) {
  Series s;
  s.run = r.label;
  s.kind = kind;
  s.style = r.style;
  s.draw = draw;
  s.points = std::move(points);
  return s;
}

template <class Value>
Points window_points(const RunLog& log, Value value) {
  Points p;
  for (const WindowRecord& w : log.windows) p.emplace_back(static_cast<double>(w.step), value(w));
  return p;
}

Points eval_points(const RunLog& log) {
  Points p;
  for (const EvalRecord& e : log.evals) p.emplace_back(static_cast<double>(e.step), e.loss);
  return p;
}

// (step, value - the reference's value at the same step) where both have the step.
Points difference(const Points& run, const Points& reference) {
  std::map<double, double> ref(reference.begin(), reference.end());
  Points d;
  for (const auto& [step, v] : run) {
    const auto it = ref.find(step);
    if (it != ref.end()) d.emplace_back(step, v - it->second);
  }
  return d;
}

std::string loss_chart(const std::vector<ReportRun>& runs) {
  LineChart c = chart("chart-loss", "Loss", {"cross-entropy loss"});
  for (const ReportRun& r : runs) {
    c.legend.push_back(legend_of(r));
    c.series.push_back(series(r, "training", Draw::line,
                              window_points(*r.log, [](const WindowRecord& w) { return w.loss; })));
    c.series.push_back(series(r, "validation", Draw::markers, eval_points(*r.log)));
  }
  return figure(plot::render(c),
                "Lines: training loss (the mean over each logging window). Markers: validation "
                "loss. Same seed and batches in every run.");
}

std::string difference_chart(const std::vector<ReportRun>& runs) {
  const ReportRun* ref = reference_run(runs);
  LineChart c =
      chart("chart-difference", ref ? "Loss minus " + ref->label + "'s" : "Loss difference",
            {"loss difference", Scale::linear, true});
  c.empty_text = ref ? "no other run to compare" : "no float32 run to compare with";
  if (ref != nullptr) {
    c.reference_y = 0.0;
    c.reference_label = ref->label + " (reference)";
    const auto train_loss = [](const WindowRecord& w) { return w.loss; };
    const Points ref_train = window_points(*ref->log, train_loss);
    const Points ref_eval = eval_points(*ref->log);
    for (const ReportRun& r : runs) {
      if (&r == ref) continue;
      c.legend.push_back(legend_of(r));
      c.series.push_back(series(r, "training", Draw::line,
                                difference(window_points(*r.log, train_loss), ref_train)));
      c.series.push_back(
          series(r, "validation", Draw::markers, difference(eval_points(*r.log), ref_eval)));
    }
  }
  return figure(plot::render(c),
                "Each run's loss minus the float32 run's at the same step (lines: training, "
                "markers: validation). Above zero: worse than float32.");
}

// "a, b, c", escaped.
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return plot::escape(out);
}

std::string loss_scale_chart(const std::vector<ReportRun>& runs) {
  LineChart c = chart("chart-loss-scale", "Loss scale", {"loss scale", Scale::log2});
  c.empty_text = "no run records a loss scale";
  std::vector<std::string> unscaled, unlogged;
  for (const ReportRun& r : runs) {
    if (r.log->run.loss_scaling == LossScalingMode::none) {
      unscaled.push_back(r.label);
      continue;
    }
    // The scale each logged or skipped step used, held back to the previous such step. A
    // run whose step records carry no scale (log_loss_scale false) gets no line: its skipped
    // steps alone would draw a scale it did not record.
    std::map<double, double> at;
    for (const WindowRecord& w : r.log->windows) {
      if (w.loss_scale) at[static_cast<double>(w.step)] = *w.loss_scale;
    }
    const bool logged = !at.empty();
    Points skipped;
    for (const SkipRecord& s : r.log->skips) {
      if (logged) at[static_cast<double>(s.step)] = s.loss_scale;
      skipped.emplace_back(static_cast<double>(s.step), s.loss_scale);
    }
    if (!logged) unlogged.push_back(r.label);
    if (!logged && skipped.empty()) continue;
    c.legend.push_back(legend_of(r));
    if (logged) {
      c.series.push_back(series(r, "loss scale", Draw::staircase, Points(at.begin(), at.end())));
    }
    Series marks = series(r, "skipped", Draw::markers, std::move(skipped));
    marks.style.marker = plot::Marker::cross;
    c.series.push_back(marks);
  }
  c.legend.push_back({"skipped step", {"#000000", "", plot::Marker::cross}, false});
  std::string caption =
      "The scale each step used; a cross marks each skipped step (non-finite gradients: the "
      "step changes nothing, and the scale is multiplied by backoff_factor unless hysteresis "
      "or overflow_tolerance lets the overflow pass).";
  if (!unscaled.empty()) caption += " Not scaled: " + name_list(unscaled) + ".";
  if (!unlogged.empty()) {
    caption += " Scale not recorded (log_loss_scale false; only skipped steps shown): " +
               name_list(unlogged) + ".";
  }
  return figure(plot::render(c), caption);
}

template <class Value>
std::string per_window_chart(const std::vector<ReportRun>& runs, const char* id, const char* title,
                             plot::Axis y, Value value, const char* caption) {
  LineChart c = chart(id, title, std::move(y));
  for (const ReportRun& r : runs) {
    c.legend.push_back(legend_of(r));
    c.series.push_back(series(r, "training", Draw::line, window_points(*r.log, value)));
  }
  return figure(plot::render(c), caption);
}

std::string bar_charts(const std::vector<ReportRun>& runs) {
  plot::BarChart speed{"chart-throughput", "Throughput", {}};
  plot::BarChart memory{"chart-memory", "Peak resident memory", {}};
  for (const ReportRun& r : runs) {
    const double rate = median_throughput(*r.log);
    speed.bars.push_back(
        {r.label, r.label, throughput_text(*r.log), rate, r.style, throughput_range(*r.log)});
    const std::optional<double> rss = peak_rss(*r.log);
    memory.bars.push_back({r.label, r.label, rss ? fmt::format("{:.0f} MiB", *rss) : "n/a",
                           rss.value_or(0.0), r.style, std::nullopt});
  }
  return figure(plot::render(speed) + plot::render(memory),
                "Throughput: the median over the logging windows after the first (warm-up "
                "excluded; evaluations and checkpoints excluded); the whisker spans the slowest "
                "and fastest window (a wide one: the machine was busy with other work). Peak RSS: "
                "the training process's "
                "high-water mark (each run in its own process under mantissa compare).");
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
  out += bar_charts(runs);
  return out + "</div>\n";
}

}  // namespace mantissa::report::detail
