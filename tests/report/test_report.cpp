// The precision report from hand-built runs: every run's series in every chart, points at
// the pixels computed by hand, the tables' figures, and a page that needs nothing from
// anywhere else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/report/report.hpp"

namespace mantissa::report {
namespace {

using numerics::Format;

// Windows at steps 10, 20, 30 with these losses; one evaluation at 30.
RunLog run(Format f, LossScalingMode mode, std::vector<double> losses, double eval_loss,
           double scale) {
  RunLog l;
  l.source = "runs/cmp/" + std::string(numerics::name(f)) + "/metrics.jsonl";
  l.run.format = f;
  l.run.loss_scaling = mode;
  l.run.model = "gpt";
  l.run.parameters = 1902720;
  l.run.unit = "tokens";
  l.run.items_per_step = 2048;
  l.run.max_steps = 30;
  l.run.seed = 1;
  l.run.cpu = "Test CPU";
  l.run.settings = {{"enabled", f == Format::float32 ? "false" : "true"}};
  if (f != Format::float32) l.run.settings.push_back({"fp16_type", std::string(numerics::name(f))});
  if (mode == LossScalingMode::dynamic) l.run.settings.push_back({"initial_loss_scale", "2^15"});
  l.run.settings.push_back({"max_gradient_norm", "1"});
  for (int i = 0; i < 3; ++i) {
    WindowRecord w;
    w.step = 10 * (i + 1);
    w.loss = losses[i];
    w.learning_rate = 0.001 * (i + 1);
    if (mode != LossScalingMode::none) w.loss_scale = scale;
    w.grad_norm = 1.0 / (1 << i);
    w.items_per_second = 100.0 * (i + 1);  // median after the first: 250
    w.peak_rss_mib = 50.0 + 10 * i;        // peak 70
    l.windows.push_back(w);
  }
  l.evals.push_back({30, eval_loss, std::exp(eval_loss), std::nullopt, 10});
  return l;
}

std::vector<RunLog> four_runs() {
  std::vector<RunLog> runs;
  runs.push_back(run(Format::float32, LossScalingMode::none, {5.8, 4.0, 2.2}, 3.0, 1));
  runs.push_back(run(Format::bfloat16, LossScalingMode::none, {5.6, 3.8, 2.0}, 2.9, 1));
  runs.push_back(run(Format::float16, LossScalingMode::dynamic, {5.9, 4.1, 2.3}, 3.1, 32768));
  runs.push_back(
      run(Format::cbfloat16, LossScalingMode::dynamic, {5.8, 4.0, 2.2}, 3.0, 2147483648.0));
  RunLog& f16 = runs[2];
  f16.skips = {{1, 65536, {"head.weight", "wte.weight"}}, {2, 32768, {"head.weight"}}};
  for (WindowRecord& w : f16.windows) w.skipped_steps = 2;
  return runs;
}

// The <svg> element with this id.
std::string chart(const std::string& page, const std::string& id) {
  const std::size_t start = page.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return page.substr(start, page.find("</svg>", start) - start);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string series(const std::string& run, const std::string& kind) {
  return "<g class=\"series\" data-run=\"" + run + "\" data-kind=\"" + kind + "\"";
}

TEST(Report, EveryChartHoldsEveryRunsSeries) {
  // Throughput measured interleaved (compare's): each run's median and slowest..fastest step.
  ReportOptions options;
  for (const char* f : {"float32", "bfloat16", "float16", "cbfloat16"})
    options.throughput.push_back({f, "tokens", 250, 200, 300, 10});
  const std::string page = render_report(four_runs(), options);
  for (const char* id : {"chart-loss", "chart-difference", "chart-loss-scale", "chart-grad-norm",
                         "chart-learning-rate", "chart-throughput", "chart-memory"}) {
    EXPECT_FALSE(chart(page, id).empty()) << id;
  }
  const std::vector<std::string> formats = {"float32", "bfloat16", "float16", "cbfloat16"};
  for (const std::string& f : formats) {
    EXPECT_EQ(count(chart(page, "chart-loss"), series(f, "training") + " data-points=\"3\""), 1)
        << f;
    EXPECT_EQ(count(chart(page, "chart-loss"), series(f, "validation") + " data-points=\"1\""), 1)
        << f;
    EXPECT_EQ(count(chart(page, "chart-grad-norm"), series(f, "training") + " data-points=\"3\""),
              1);
    EXPECT_EQ(
        count(chart(page, "chart-learning-rate"), series(f, "training") + " data-points=\"3\""), 1);
    EXPECT_EQ(count(chart(page, "chart-throughput"), "<g class=\"bar\" data-run=\"" + f + "\""), 1);
    EXPECT_EQ(count(chart(page, "chart-memory"), "<g class=\"bar\" data-run=\"" + f + "\""), 1);
    // Throughput whiskers span the slowest to the fastest step: 200 to 300 of 300 (330
    // pixels from x = 120).
    EXPECT_NE(chart(page, "chart-throughput").find("d=\"M340.0 "), std::string::npos);
  }
  // Differences: every run but the reference; the loss scale: the runs that scale.
  const std::string diff = chart(page, "chart-difference");
  EXPECT_EQ(count(diff, "<g class=\"series\""), 6);
  EXPECT_EQ(count(diff, "data-run=\"float32\""), 0);
  const std::string scale = chart(page, "chart-loss-scale");
  EXPECT_EQ(count(scale, series("float16", "loss scale") + " data-points=\"5\""), 1);
  EXPECT_EQ(count(scale, series("float16", "skipped") + " data-points=\"2\""), 1);
  EXPECT_EQ(count(scale, series("cbfloat16", "loss scale") + " data-points=\"3\""), 1);
  EXPECT_EQ(count(scale, series("cbfloat16", "skipped") + " data-points=\"0\""), 1);
  EXPECT_EQ(count(scale, "data-run=\"float32\""), 0);
  EXPECT_NE(page.find("Not scaled: float32, bfloat16."), std::string::npos);
}

// A run that scales without logging its scale (log_loss_scale false) gets no loss-scale line:
// its skipped steps are marked at the scale they used, nothing is drawn between them.
TEST(Report, AnUnloggedScaleIsNotDrawn) {
  std::vector<RunLog> runs = four_runs();
  for (const std::size_t i : {2, 3}) {
    for (WindowRecord& w : runs[i].windows) w.loss_scale.reset();
  }
  const std::string page = render_report(runs);
  const std::string scale = chart(page, "chart-loss-scale");
  EXPECT_EQ(count(scale, "data-kind=\"loss scale\""), 0) << scale;
  EXPECT_EQ(count(scale, series("float16", "skipped") + " data-points=\"2\""), 1);
  EXPECT_EQ(count(scale, "data-run=\"cbfloat16\""), 0) << "no skips, nothing logged: no series";
  EXPECT_NE(page.find("Scale not recorded (log_loss_scale false; only skipped steps shown): "
                      "float16, cbfloat16."),
            std::string::npos);
  // Nothing scaled or logged at all: the chart says so.
  runs[2].skips.clear();
  runs[2].run.loss_scaling = LossScalingMode::fixed;
  const std::string none = chart(render_report(runs), "chart-loss-scale");
  EXPECT_EQ(count(none, "<g class=\"series\""), 0);
  EXPECT_NE(none.find(">no run records a loss scale</text>"), std::string::npos);
}

// x: steps 0..30 over [72, 562]; loss y: 2..6 over [290, 72]: step 10 at 72 + 490/3.
TEST(Report, PointsSitAtTheirComputedPixels) {
  const std::string page = render_report(four_runs());
  EXPECT_NE(
      chart(page, "chart-loss")
          .find(series("float32", "training") + " data-points=\"3\"><path d=\"M235.3 82.9L398.7 "
                                                "181.0L562.0 279.1\""),
      std::string::npos);
  // Differences span -0.2 .. 0.1: zero at 290 - 218 * 2/3; float16 is 0.1 above float32.
  const std::string diff = chart(page, "chart-difference");
  EXPECT_NE(diff.find("<path class=\"reference\" d=\"M72.0 144.7H562.0\""), std::string::npos);
  EXPECT_NE(diff.find(series("float16", "training") +
                      " data-points=\"3\"><path d=\"M235.3 72.0L398.7 72.0L562.0 72.0\""),
            std::string::npos)
      << diff;
  // Loss scale on 2^14 .. 2^32 (18 octaves): float16 used 2^16 at step 1, then 2^15.
  EXPECT_NE(chart(page, "chart-loss-scale")
                .find(series("float16", "loss scale") + " data-points=\"5\"><path d=\"M88.3 "
                                                        "265.8V277.9H104.7V277.9H235.3"),
            std::string::npos);
}

TEST(Report, TablesHoldTheFigures) {
  const std::string page = render_report(four_runs());
  const std::size_t row = page.find("<tr data-run=\"float16\">");
  ASSERT_NE(row, std::string::npos);
  const std::string f16 = page.substr(row, page.find("</tr>", row) - row);
  // These hand-built runs carry no end record: the table says so.
  EXPECT_NE(f16.find("<td>30 / 30 <small>(no end "
                     "recorded)</small></td><td>2</td><td>2.3000</td><td>3.1000 <small>(step "
                     "30)</small></td><td>perplexity 22.198</td><td>+0.1000</td><td>250 "
                     "tokens/s &dagger;</td><td>70 MiB</td>"),
            std::string::npos)
      << f16;
  // Overflows: head.weight in both of float16's skipped steps, wte.weight in one.
  EXPECT_NE(page.find("<tr><td><code>head.weight</code></td><td></td><td></td><td>2</td><td></td>"
                      "</tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><td><code>wte.weight</code></td><td></td><td></td><td>1</td><td></td>"
                      "</tr>"),
            std::string::npos);
  EXPECT_NE(page.find("2 skipped steps (steps 1, 2)"), std::string::npos);
  // Settings: a row per name; a run without it shows a dash; 2^k as a superscript.
  EXPECT_NE(page.find("<tr><td>initial_loss_scale</td><td>&mdash;</td><td>&mdash;</td><td>"
                      "2<sup>15</sup></td><td>2<sup>15</sup></td></tr>"),
            std::string::npos);
  // Rows in every run's order, though the first run (float32) lacks some of them.
  std::vector<std::size_t> at;
  for (const char* name : {"enabled", "fp16_type", "initial_loss_scale", "max_gradient_norm"})
    at.push_back(page.find(std::string("<tr><td>") + name + "</td>"));
  EXPECT_NE(at.back(), std::string::npos);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  // The formats (docs/design.md section 2).
  EXPECT_NE(page.find("<tr><td>float16</td><td>1 / 5 / 10</td><td>15</td><td>65504</td><td>"
                      "6.10352e-05 = 2<sup>-14</sup></td><td>5.96046e-08 = 2<sup>-24</sup></td>"
                      "<td>0.000976562 = 2<sup>-10</sup></td></tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><td>cbfloat16</td><td>1 / 6 / 9</td><td>31</td><td>4.29077e+09</td>"),
            std::string::npos);
  EXPECT_NE(page.find("gpt, 1,902,720 parameters; 2,048 tokens per step; 30 steps; seed 1; on "
                      "Test CPU"),
            std::string::npos);
  EXPECT_NE(page.find("validation loss 3.1000 (+0.1000 against float32)"), std::string::npos);
}

TEST(Report, ThePageNeedsNothingFromElsewhere) {
  const std::string page = render_report(four_runs());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* outside :
       {"http:", "https:", "<script", "url(", "@import", " src=", " href=", "<link", "<img"}) {
    EXPECT_EQ(page.find(outside), std::string::npos) << outside;
  }
}

TEST(Report, LabelsAreUniqueAndEscaped) {
  std::vector<RunLog> runs = four_runs();
  runs[0].run.settings.push_back({"note", "<b>&"});
  runs[1] = runs[2];
  runs[1].source = "runs/a/metrics.jsonl";
  runs[2].source = "runs/b/metrics.jsonl";
  const std::string page = render_report(runs);
  EXPECT_NE(page.find(series("float16 (a)", "training")), std::string::npos);
  EXPECT_NE(page.find(series("float16 (b)", "training")), std::string::npos);
  EXPECT_NE(page.find("<td>&lt;b&gt;&amp;</td>"), std::string::npos);
  EXPECT_EQ(page.find("<b>&"), std::string::npos);
}

TEST(Report, WithoutAFloat32RunThereIsNoDifference) {
  std::vector<RunLog> runs = four_runs();
  runs.erase(runs.begin());
  const std::string diff = chart(render_report(runs), "chart-difference");
  EXPECT_EQ(count(diff, "<g class=\"series\""), 0);
  EXPECT_NE(diff.find(">no float32 run to compare with</text>"), std::string::npos);
}

TEST(Report, NoRunsIsAnError) {
  EXPECT_THROW(render_report({}), Error);
}

}  // namespace
}  // namespace mantissa::report
