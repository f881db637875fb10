// Issue 27's report items on hand-built runs: a fall-back in the run's label, how each run
// ended, throughput compared only when measured interleaved, several seeds drawn as a mean
// and a band (pixels and figures computed by hand), the same-bits note, few logged points
// said, and long names that wrap instead of being cut or overlapping the plot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/report/report.hpp"
#include "svg_plot.hpp"

namespace mantissa::report {
namespace {

using numerics::Format;

// A run in `dir` with windows at steps 10, 20, 30 of these losses and an evaluation at 30.
RunLog run(Format f, const std::string& dir, std::vector<double> losses,
           std::optional<double> eval_loss, std::uint64_t seed = 1) {
  RunLog l;
  l.source = dir + "/metrics.jsonl";
  l.run.format = f;
  l.run.loss_scaling = f == Format::float16 ? LossScalingMode::dynamic : LossScalingMode::none;
  l.run.model = "gpt";
  l.run.parameters = 1000;
  l.run.items_per_step = 64;
  l.run.max_steps = 30;
  l.run.seed = seed;
  l.run.settings = {{"fp16_type", std::string(numerics::name(f))}};
  for (int i = 0; i < 3; ++i) {
    WindowRecord w;
    w.step = 10 * (i + 1);
    w.loss = losses[i];
    w.learning_rate = 0.001;
    if (f == Format::float16) w.loss_scale = 32768;
    w.grad_norm = 1.0;
    w.items_per_second = 100.0 * (i + 1);  // median after the first: 250
    w.peak_rss_mib = 50;
    l.windows.push_back(w);
  }
  if (eval_loss) l.evals.push_back({30, *eval_loss, std::exp(*eval_loss), std::nullopt, 2});
  l.outcome = OutcomeRecord{30, RunOutcome::completed, 0, std::nullopt, "", "", ""};
  return l;
}

std::string chart(const std::string& page, const std::string& id) {
  const std::size_t start = page.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return page.substr(start, page.find("</svg>", start) - start);
}

std::string row(const std::string& page, const std::string& label) {
  const std::size_t at = page.find("<tr data-run=\"" + label + "\">");
  if (at == std::string::npos) return "";
  return page.substr(at, page.find("</tr>", at) - at);
}

std::string series(const std::string& run, const std::string& kind) {
  return "<g class=\"series\" data-run=\"" + run + "\" data-kind=\"" + kind + "\"";
}

TEST(ReportHonesty, AFallBackIsInTheLabelAndTheStory) {
  std::vector<RunLog> runs{run(Format::float32, "c/float32", {5, 4, 3}, 3.0),
                           run(Format::float16, "c/float16", {5, 4, 3}, 3.1)};
  runs[1].fallbacks.push_back(
      {12, Format::float16, Format::bfloat16, "loss scale stuck at its minimum 2^-14"});
  runs[1].outcome->skipped_steps = 3;
  runs[1].outcome->last_skipped_step = 12;
  const std::string page = render_report(runs);
  const std::string label = "float16 \u2192 bfloat16";
  EXPECT_NE(chart(page, "chart-loss").find(series(label, "training")), std::string::npos);
  EXPECT_NE(row(page, label).find(label + "</td>"), std::string::npos);
  EXPECT_NE(page.find("completed 30 steps (3 skipped; last skipped step 12); fell back from "
                      "float16 to bfloat16 after step 12: loss scale stuck at its minimum 2^-14"),
            std::string::npos);
  EXPECT_NE(page.find("Fell back to bfloat16 without loss scaling (on_stuck: fall_back): " + label +
                      " after step 12."),
            std::string::npos);
  EXPECT_NE(page.find("<tr><td>bfloat16</td><td>1 / 8 / 7</td>"), std::string::npos)
      << "the format it continued in is among the formats";
  EXPECT_EQ(page.find(series("float16", "training")), std::string::npos) << "not plain float16";
}

TEST(ReportHonesty, AStoppedRunSaysWhereAndWhy) {
  std::vector<RunLog> runs{run(Format::float32, "c/float32", {5, 4, 3}, 3.0),
                           run(Format::float16, "c/float16", {5, 4, 3}, std::nullopt)};
  RunLog& stopped = runs[1];
  stopped.windows.clear();  // it never reached a logged step
  stopped.skips = {{1, 32768, {"w"}}, {2, 16384, {"w"}}};
  stopped.outcome =
      OutcomeRecord{2,
                    RunOutcome::loss_scale_floor,
                    2,
                    2,
                    "",
                    "",
                    "loss scale stuck at its minimum 16384: gradients keep overflowing"};
  runs.push_back(run(Format::bfloat16, "c/bfloat16", {5, 4, 3}, 3.0));
  runs.back().outcome.reset();  // killed: no end record
  const std::string page = render_report(runs);
  EXPECT_NE(row(page, "float16")
                .find("<td>2 / 30 <small>(stopped at the loss-scale floor)</small></td><td>2</td>"),
            std::string::npos)
      << row(page, "float16");
  const std::string why =
      "stopped at the loss-scale floor at step 2 of 30 (2 skipped; last skipped step 2): loss "
      "scale stuck at its minimum 16384: gradients keep overflowing";
  EXPECT_NE(page.find("<b>float16</b> <small>(c/float16/metrics.jsonl)</small>: " + why),
            std::string::npos);
  EXPECT_NE(page.find("; " + why + "</li>"), std::string::npos) << "in the glance too";
  EXPECT_NE(row(page, "bfloat16").find("<small>(no end recorded)</small>"), std::string::npos);
  EXPECT_NE(page.find("<b>bfloat16</b> <small>(c/bfloat16/metrics.jsonl)</small>: no end "
                      "recorded (still running"),
            std::string::npos);
  EXPECT_NE(page.find("<b>float32</b> <small>(c/float32/metrics.jsonl)</small>: completed 30 "
                      "steps (0 skipped)"),
            std::string::npos);
}

TEST(ReportHonesty, ThroughputIsComparedOnlyWhenMeasuredInterleaved) {
  const std::vector<RunLog> runs{run(Format::float32, "c/float32", {5, 4, 3}, 3.0),
                                 run(Format::float16, "c/float16", {5, 4, 3}, 3.1)};
  // Runs trained one after another: no bars, a note saying why, each run's own figure marked.
  const std::string alone = render_report(runs);
  EXPECT_TRUE(chart(alone, "chart-throughput").empty());
  EXPECT_NE(alone.find("<b>No throughput comparison.</b> These runs trained one after another"),
            std::string::npos);
  EXPECT_NE(row(alone, "float16").find("<td>250 tokens/s &dagger;</td>"), std::string::npos);
  EXPECT_EQ(alone.find("tokens/s (interleaved)"), std::string::npos);
  EXPECT_FALSE(chart(alone, "chart-memory").empty()) << "memory is compared: a process each";

  // Interleaved records: bars, each whisker from the slowest to the fastest step. Labels fit
  // the 120-pixel column, so bars span 330 pixels from x = 120 up to the largest value
  // (1250): 800 at 120 + 330 * 0.64 = 331.2; rows of 30 from y = 34, the middle at 47.
  ReportOptions o;
  o.throughput = {{"float32", "tokens", 1000, 800, 1250, 10},
                  {"float16", "tokens", 500, 400, 625, 10},
                  {"bfloat16", "tokens", 900, 850, 950, 10}};  // no such run: not drawn
  const std::string page = render_report(runs, o);
  const std::string bars = chart(page, "chart-throughput");
  EXPECT_NE(bars.find("<g class=\"bar\" data-run=\"float32\" data-value=\"1000\">"),
            std::string::npos);
  EXPECT_NE(bars.find("d=\"M331.2 47.0H450.0M331.2 41.0V53.0M450.0 41.0V53.0\""), std::string::npos)
      << bars;
  // float16: 400 .. 625 of 1250 -> 225.6 .. 285.0, the second row's middle at 77.
  EXPECT_NE(bars.find("d=\"M225.6 77.0H285.0"), std::string::npos) << bars;
  EXPECT_EQ(bars.find("data-run=\"bfloat16\""), std::string::npos);
  EXPECT_NE(row(page, "float16").find("<td>500 tokens/s <small>(interleaved)</small></td>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>float16</b>: validation loss 3.1000 (+0.1000 against float32); 0 "
                      "skipped steps; 500 tokens/s (interleaved)</li>"),
            std::string::npos);
  // A record for one run only: the other is named as not measured.
  o.throughput.resize(1);
  EXPECT_NE(render_report(runs, o).find("Not measured interleaved: float16."), std::string::npos);
}

// Two seeds of float32 (losses 2, 3, 4 and 4, 5, 6: mean 3, 4, 5) on a chart of x 0..30 over
// [72, 562] and y 2..6 over [290, 72]: y(v) = 290 - (v - 2) * 54.5.
TEST(ReportHonesty, SeedsAreAMeanAndABand) {
  std::vector<RunLog> runs{run(Format::float32, "c/float32/seed-1", {2, 3, 4}, std::nullopt, 1),
                           run(Format::float32, "c/float32/seed-2", {4, 5, 6}, std::nullopt, 2)};
  ReportOptions o;
  o.group_seeds = true;
  const std::string loss = chart(render_report(runs, o), "chart-loss");
  EXPECT_NE(loss.find(series("float32", "training range") +
                      " data-points=\"3\"><path d=\"M235.3 290.0L398.7 235.5L562.0 181.0L562.0 "
                      "72.0L398.7 126.5L235.3 181.0Z\" fill=\"#000000\" fill-opacity=\"0.18\""),
            std::string::npos)
      << loss;
  EXPECT_NE(loss.find(series("float32", "training") +
                      " data-points=\"3\"><path d=\"M235.3 235.5L398.7 181.0L562.0 126.5\""),
            std::string::npos)
      << loss;

  // Three seeds each of float32 and float16, evaluated: tables of mean +- sample standard
  // deviation. float32's validation losses 3.0, 3.1, 3.2 (mean 3.1, s.d. 0.1); float16's
  // 3.3, 3.4, 3.5 (mean 3.4): 0.3 above.
  runs.clear();
  for (int s = 0; s < 3; ++s) {
    const double d = 0.1 * s;
    runs.push_back(run(Format::float32, "c/float32/seed-" + std::to_string(s),
                       {5 + d, 4 + d, 3 + d}, 3.0 + d, s));
    runs.push_back(run(Format::float16, "c/float16/seed-" + std::to_string(s),
                       {5.2 + d, 4.2 + d, 3.2 + d}, 3.3 + d, s));
  }
  const std::string page = render_report(runs, o);
  EXPECT_NE(row(page, "float32")
                .find("<td>3</td><td>30 / 30</td><td>0</td><td>3.1000 &plusmn; "
                      "0.1000</td><td>3.1000 &plusmn; 0.1000 <small>(step "
                      "30)</small></td>"),
            std::string::npos)
      << row(page, "float32");
  EXPECT_NE(row(page, "float16").find("<td>+0.3000</td>"), std::string::npos);
  EXPECT_NE(page.find("<b>float16</b> (3 seeds): validation loss 3.4000 &plusmn; 0.1000 "
                      "(+0.3000 against float32)"),
            std::string::npos);
  const std::string diff = chart(page, "chart-difference");
  EXPECT_NE(diff.find(series("float32", "training range") + " data-points=\"3\""),
            std::string::npos)
      << "the reference's own seeds about their mean: the noise floor";
  EXPECT_NE(diff.find(series("float16", "validation range") + " data-points=\"1\""),
            std::string::npos);
  EXPECT_NE(page.find("seed 2)</small>: completed 30 steps"), std::string::npos);
  // Without grouping: six runs, each labelled by its directory.
  EXPECT_NE(render_report(runs).find(series("float16 (seed-2)", "training")), std::string::npos);
  // Two runs of one job with the same seed cannot be averaged as seeds.
  runs[2].run.seed = 0;
  try {
    render_report(runs, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "report: c/float32/seed-0/metrics.jsonl and c/float32/seed-1/metrics.jsonl are the "
              "same job with the same seed 0 (grouping seeds averages runs of different seeds)");
  }
}

TEST(ReportHonesty, SameBitsAndFewPointsAreSaid) {
  std::vector<RunLog> runs{run(Format::float16, "c/float16", {5, 4, 3}, 3.0)};
  runs[0].run.same_bits_opt_levels = {0};
  const std::string page = render_report(runs);
  EXPECT_NE(page.find("; computes the same bits as precision_opt_level 0 on these routes: float16 "
                      "products on fp32 routes are exact in one pass at POL 0 and 1"),
            std::string::npos);
  EXPECT_NE(page.find("A curve here has only 3 logged points"), std::string::npos);
  // A short run that logged every one of its steps has nothing coarse to say.
  std::vector<RunLog> every{runs[0]};
  every[0].windows.resize(1);
  for (int step = 1; step <= 6; ++step) {
    every[0].windows.push_back(runs[0].windows[0]);
    every[0].windows.back().step = step;
  }
  every[0].windows.erase(every[0].windows.begin());
  EXPECT_EQ(render_report(every).find("A curve here has only"), std::string::npos);
  // A routes record's levels (known once the products were routed) take precedence.
  runs[0].routes.push_back({1, {}, {}});
  runs[0].run.same_bits_opt_levels.clear();
  EXPECT_EQ(render_report(runs).find("computes the same bits"), std::string::npos);
  runs[0].routes.back().same_bits_opt_levels = {0};
  EXPECT_NE(render_report(runs).find("computes the same bits as precision_opt_level 0"),
            std::string::npos);
}

// Six runs whose labels carry long directory names: the legend wraps into rows (and a label
// too long for a row into lines), the plot area moves below it and the chart grows as much;
// no text runs past the chart's right edge, and every character of every label is there.
TEST(ReportHonesty, LongNamesWrapAndTheLegendKeepsClearOfThePlot) {
  std::vector<RunLog> runs;
  std::vector<std::string> labels;
  const std::string long_name = "an-experiment-with-a-rather-long-directory-name-that-goes-on";
  for (int i = 0; i < 6; ++i) {  // two float32 runs (the first is the reference), four float16
    const std::string dir = "runs/" + long_name + "-" + std::to_string(i);
    const Format f = i < 2 ? Format::float32 : Format::float16;
    runs.push_back(run(f, dir, {5, 4, 3}, 3.0));
    labels.push_back(std::string(numerics::name(f)) + " (" + long_name + "-" + std::to_string(i) +
                     ")");
  }
  const std::string loss = chart(render_report(runs), "chart-loss");
  const std::size_t frame = loss.find("<rect x=\"72.0\" y=\"");
  ASSERT_NE(frame, std::string::npos);
  const double top = std::stod(loss.substr(frame + 18));
  EXPECT_GT(top, plot::kTop) << "the plot moved down for the legend";
  const std::size_t h = loss.find("height=\"");
  EXPECT_NEAR(std::stod(loss.substr(h + 8)), plot::kHeight + (top - plot::kTop), 0.05);
  // Every legend line: above the plot, inside the chart, its text whole.
  const std::size_t legend_end = loss.find("</g>", loss.find("<g class=\"legend\">"));
  std::string legend_text;
  double lowest = 0;
  for (std::size_t at = loss.find("<text x=\"", loss.find("<g class=\"legend\">")); at < legend_end;
       at = loss.find("<text x=\"", at + 1)) {
    const double x = std::stod(loss.substr(at + 9));
    double y = std::stod(loss.substr(loss.find("y=\"", at) + 3));
    const std::size_t end = loss.find("</text>", at);
    for (std::size_t t = loss.find("<tspan", at); t < end; t = loss.find("<tspan", t + 1)) {
      const std::size_t open = loss.find('>', t) + 1;
      const std::string line = loss.substr(open, loss.find("</tspan>", open) - open);
      EXPECT_LE(x + plot::text_width(line, 12), plot::kWidth - plot::kRight) << line;
      legend_text += line;
      lowest = std::max(lowest, y);
      y += 14;
    }
  }
  EXPECT_LT(lowest + 7, top) << "legend text over the plot";
  std::string all;
  for (const std::string& l : labels) {
    for (const char c : l) all += c == ' ' ? "" : std::string(1, c);
  }
  legend_text.erase(std::remove(legend_text.begin(), legend_text.end(), ' '), legend_text.end());
  EXPECT_EQ(legend_text, all) << "a label was cut";

  // A title too long for one line wraps, whole, inside the chart (bold: 10% wider).
  const std::string diff = chart(render_report(runs), "chart-difference");
  const std::size_t title = diff.find("font-weight=\"bold\">");
  ASSERT_NE(title, std::string::npos);
  std::string title_text;
  int title_lines = 0;
  const std::size_t title_end = diff.find("</text>", title);
  for (std::size_t t = diff.find("<tspan", title); t < title_end; t = diff.find("<tspan", t + 1)) {
    const std::size_t open = diff.find('>', t) + 1;
    const std::string line = diff.substr(open, diff.find("</tspan>", open) - open);
    EXPECT_LE(plot::kLeft + plot::text_width(line, 14 * 1.1), plot::kWidth) << line;
    title_text += line;
    ++title_lines;
  }
  EXPECT_GT(title_lines, 1);
  std::string want = "Lossminus" + labels[0] + "&#39;s";  // the spaces are where it broke
  want.erase(std::remove(want.begin(), want.end(), ' '), want.end());
  title_text.erase(std::remove(title_text.begin(), title_text.end(), ' '), title_text.end());
  EXPECT_EQ(title_text, want);
  // The reference's label, too long for one line over the zero line, is in the legend.
  const std::size_t legend_at = diff.find("<g class=\"legend\">");
  EXPECT_NE(diff.find("(reference)</tspan>", legend_at), std::string::npos) << diff;
  EXPECT_EQ(diff.find("(reference)</text>"), std::string::npos);
}

}  // namespace
}  // namespace mantissa::report
