// The report's "which layer loses what" section and overflow origins, from hand-built runs:
// one heat map pair per run that measured, rows and cells as recorded (a site missing on a
// step is drawn as not measured), colours placed on one scale for every run (worked by hand
// from the palette), names escaped, the table sorted by SNR; and the metrics record's round
// trip with its errors.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "mantissa/report/report.hpp"
#include "svg_heatmap.hpp"

namespace mantissa::report {
namespace {

using numerics::Format;
using precision::QuantRole;

RunLog base_run(Format f, const std::string& dir) {
  RunLog l;
  l.source = "runs/" + dir + "/metrics.jsonl";
  l.run.format = f;
  l.run.model = "gpt";
  l.run.max_steps = 4;
  WindowRecord w;
  w.step = 4;
  w.loss = 1;
  l.windows.push_back(w);
  return l;
}

PrecisionSite make_site(const std::string& layer, const std::string& op, QuantRole role,
                        std::int64_t elements, std::int64_t flushed, std::optional<double> snr) {
  PrecisionSite s;
  s.layer = layer;
  s.op = op;
  s.role = role;
  s.format = Format::float16;
  s.counts.elements = elements;
  s.counts.flushed = flushed;
  s.snr_db = snr;
  return s;
}

// float32 (sampled, nothing rounded), float16 (two sampled steps), bfloat16 (never sampled).
std::vector<RunLog> runs() {
  std::vector<RunLog> out;
  out.push_back(base_run(Format::float32, "f32"));
  out.back().precision_stats = {{2, {}}, {4, {}}};
  out.push_back(base_run(Format::float16, "f16"));
  out.back().precision_stats = {
      {2,
       {make_site("blocks.0.fc", "linear", QuantRole::weight, 100, 1, 70.0),
        make_site("<evil>&layer", "linear", QuantRole::output, 100, 10, 20.0)}},
      {4,
       {make_site("blocks.0.fc", "linear", QuantRole::weight, 100, 0, std::nullopt),
        make_site("<evil>&layer", "linear", QuantRole::output, 100, 100, 45.0),
        make_site("blocks.0.fc", "linear", QuantRole::input_grad, 100, 0, 50.0)}}};
  out.push_back(base_run(Format::bfloat16, "bf16"));
  return out;
}

std::string element(const std::string& page, const std::string& open, const std::string& close) {
  const std::size_t start = page.find(open);
  if (start == std::string::npos) return "";
  return page.substr(start, page.find(close, start) - start);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(PrecisionReport, HeatMapsHoldEverySiteAndStep) {
  const std::string page = render_report(runs());
  const std::string snr = element(page, "<svg id=\"heat-snr-1\"", "</svg>");
  const std::string flushed = element(page, "<svg id=\"heat-flushed-1\"", "</svg>");
  ASSERT_FALSE(snr.empty());
  ASSERT_FALSE(flushed.empty());
  // Rows in forward order of their layers: blocks.0.fc's two sites, then the other layer.
  EXPECT_EQ(count(snr, "<g class=\"heat-row\""), 3);
  const std::size_t w = snr.find("data-row=\"blocks.0.fc \u00b7 linear \u00b7 weight\"");
  const std::size_t g = snr.find("data-row=\"blocks.0.fc \u00b7 linear \u00b7 input_grad\"");
  const std::size_t e = snr.find("data-row=\"&lt;evil&gt;&amp;layer \u00b7 linear \u00b7 output\"");
  ASSERT_NE(w, std::string::npos);
  ASSERT_NE(g, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_LT(w, g);
  EXPECT_LT(g, e);
  EXPECT_EQ(page.find("<evil>"), std::string::npos);  // escaped everywhere
  EXPECT_EQ(count(snr, "class=\"cell\""), 6);         // 3 sites x 2 sampled steps
  // input_grad was not measured at step 2: hatched, "not measured".
  EXPECT_NE(snr.find("data-column=\"2\" data-value=\"none\"><title>blocks.0.fc \u00b7 linear "
                     "\u00b7 input_grad, sampled step 2: not measured</title>"),
            std::string::npos);
  // SNR 70 and 20 span the shared range [20, 70]: 70 takes the light end of the palette
  // (#fde725), 20 the dark end (#280037); an exact site is white.
  EXPECT_NE(snr.find("fill=\"#fde725\" data-column=\"2\" data-value=\"70\""), std::string::npos);
  EXPECT_NE(snr.find("fill=\"#280037\" data-column=\"2\" data-value=\"20\""), std::string::npos);
  EXPECT_NE(snr.find("fill=\"#ffffff\" data-column=\"4\" data-value=\"inf\"><title>blocks.0.fc "
                     "\u00b7 linear \u00b7 weight, sampled step 4: exact</title>"),
            std::string::npos);
  // Fractions flushed: 0.01 to 1 on a log scale drawn over [10^-3, 10] (one decade further at
  // each end, where the data sits on a decade); 0.1 is then halfway: the palette's middle
  // (#26828e). None flushed: white.
  EXPECT_NE(flushed.find("fill=\"#26828e\" data-column=\"2\" data-value=\"0.1\""),
            std::string::npos);
  EXPECT_NE(flushed.find("fill=\"#ffffff\" data-column=\"4\" data-value=\"0\""), std::string::npos);
}

TEST(PrecisionReport, RunsThatDidNotMeasureSaySo) {
  const std::string page = render_report(runs());
  EXPECT_EQ(page.find("id=\"heat-snr-0\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"heat-snr-2\""), std::string::npos);
  EXPECT_NE(page.find("Nothing was rounded on the sampled steps (a float32 run)."),
            std::string::npos);
  EXPECT_NE(page.find("No sampled steps: this run did not measure them"), std::string::npos);
}

TEST(PrecisionReport, TheTableListsTheLastStepLowestSnrFirst) {
  const std::string table =
      element(render_report(runs()), "<table class=\"sites\" id=\"sites-1\"", "</table>");
  ASSERT_FALSE(table.empty());
  const std::size_t evil = table.find("<code>&lt;evil&gt;&amp;layer</code>");
  const std::size_t grad = table.find("<td>input_grad</td>");
  const std::size_t weight = table.find("<td>weight</td>");
  ASSERT_NE(evil, std::string::npos);
  EXPECT_LT(evil, grad);    // 45 dB
  EXPECT_LT(grad, weight);  // 50 dB, then exact
  // The evil layer: all of its 100 elements flushed at step 4; its lowest SNR was at step 2.
  EXPECT_NE(table.find("<td>100%</td>"), std::string::npos);
  EXPECT_NE(table.find("<td>45.00</td><td>20.00 [2]</td>"), std::string::npos);
  EXPECT_NE(table.find("<td>exact</td><td>70.00 [2]</td>"), std::string::npos);
}

TEST(PrecisionReport, SkippedStepsNameWhereTheyWentNonFinite) {
  std::vector<RunLog> r = runs();
  const autograd::NonfiniteOrigin fc{"linear", "blocks.0.<fc>"};
  const autograd::NonfiniteOrigin top{"scale", "", autograd::NonfiniteGradient::input_grad};
  r[1].skips = {{1, 65536, {"a"}, fc}, {2, 32768, {"a"}, fc}, {3, 16384, {"a"}, top}};
  const std::string table =
      element(render_report(r), "<table class=\"origins\" id=\"overflow-origins\"", "</table>");
  EXPECT_NE(table.find("<tr><td>the backward of linear in blocks.0.&lt;fc&gt;</td><td></td>"
                       "<td>2</td><td></td></tr>"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("<td>the backward of scale at the model&#39;s top level</td>"),
            std::string::npos);
}

TEST(PrecisionRecord, RoundTripsThroughMetricsJsonl) {
  PrecisionStatsRecord rec;
  rec.step = 20;
  PrecisionSite a = make_site("blocks.0.fc", "linear_fp8", QuantRole::grad, 4096, 3, 25.5);
  a.format = Format::float8_e5m2;
  a.counts.subnormal = 7;
  a.counts.saturated = 2;
  a.counts.overflowed = 1;
  a.counts.nonfinite = 1;
  a.scale = precision::QuantStats::ScaleRange{1.5, 3.0};
  rec.sites = {a, make_site("", "scale", QuantRole::grad, 1, 0, std::nullopt)};
  const std::string line = metrics_line(rec);
  EXPECT_EQ(line,
            R"({"precision_stats":20,"sites":[{"elements":4096,"flushed":3,"format":"float8_e5m2",)"
            R"("layer":"blocks.0.fc","nonfinite":1,"op":"linear_fp8","overflowed":1,"role":"grad",)"
            R"("saturated":2,"scale_max":3.0,"scale_min":1.5,"snr_db":25.5,"subnormal":7},)"
            R"({"elements":1,"flushed":0,"format":"float16","layer":"","nonfinite":0,"op":"scale",)"
            R"("overflowed":0,"role":"grad","saturated":0,"snr_db":null,"subnormal":0}]})");
  const std::string run_line = R"({"run":{"format":"float16","loss_scaling":"dynamic",)"
                               R"("model":"gpt","parameters":1,"unit":"tokens",)"
                               R"("items_per_step":1,"start_step":0,"max_steps":20,"seed":1,)"
                               R"("cpu":"x","settings":[]}})";
  const RunLog log = parse_metrics(run_line + "\n" + line + "\n", "m.jsonl");
  ASSERT_EQ(log.precision_stats.size(), 1u);
  EXPECT_EQ(log.precision_stats[0].step, 20);
  ASSERT_EQ(log.precision_stats[0].sites.size(), 2u);
  EXPECT_EQ(log.precision_stats[0].sites[0], rec.sites[0]);
  EXPECT_EQ(log.precision_stats[0].sites[1], rec.sites[1]);
}

TEST(PrecisionRecord, BadSitesAreErrorsNamingTheField) {
  const std::string run_line = R"({"run":{"format":"float16","loss_scaling":"dynamic",)"
                               R"("model":"gpt","parameters":1,"unit":"tokens",)"
                               R"("items_per_step":1,"start_step":0,"max_steps":20,"seed":1,)"
                               R"("cpu":"x","settings":[]}})";
  const auto error = [&](const std::string& site) {
    try {
      parse_metrics(run_line + "\n{\"precision_stats\":2,\"sites\":[" + site + "]}\n", "m.jsonl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string good_counts =
      R"("elements":4,"flushed":1,"subnormal":0,"saturated":0,"overflowed":0,"nonfinite":0)";
  EXPECT_EQ(
      error(R"({"layer":"a","op":"linear","role":"bias","format":"float16",)" + good_counts + "}"),
      "m.jsonl:2: 'sites[0].role' is 'bias' (expected one of: input, weight, grad, output, "
      "input_grad)");
  EXPECT_EQ(
      error(R"({"layer":"a","op":"linear","role":"input","format":"float12",)" + good_counts + "}"),
      "m.jsonl:2: 'sites[0].format' is 'float12', not a number format");
  EXPECT_EQ(error(R"({"layer":"a","op":"linear","role":"input","format":"float16",)"
                  R"("elements":4,"flushed":-1,"subnormal":0,"saturated":0,"overflowed":0,)"
                  R"("nonfinite":0})"),
            "m.jsonl:2: 'sites[0].flushed' is missing or not an integer >= 0");
  EXPECT_EQ(error(R"({"layer":"a","op":"linear","role":"input","format":"float16",)"
                  R"("elements":1,"flushed":2,"subnormal":0,"saturated":0,"overflowed":0,)"
                  R"("nonfinite":0})"),
            "m.jsonl:2: 'sites[0].elements' is smaller than the elements it counts");
  // The tenth audit (fuzz_metrics): counts whose sum passes 2^63 - 1 overflowed the check.
  for (const char* counts :
       {R"("elements":9223372036854775807,"flushed":9223372036854775807,"subnormal":30,)"
        R"("saturated":0,"overflowed":0,"nonfinite":0})",
        R"("elements":9223372036854775807,"flushed":0,"subnormal":0,"saturated":0,)"
        R"("overflowed":9223372036854775800,"nonfinite":9223372036854775800})"}) {
    EXPECT_EQ(error(R"({"layer":"a","op":"linear","role":"input","format":"float16",)" +
                    std::string(counts)),
              "m.jsonl:2: 'sites[0].elements' is smaller than the elements it counts");
  }
  EXPECT_EQ(error(R"({"op":"linear"})"), "m.jsonl:2: 'sites[0].layer' is missing or not a string");
  EXPECT_EQ(error(R"({"layer":"a","op":"linear","role":"input","format":"float16",)" + good_counts +
                  R"(,"scale_min":1})"),
            "m.jsonl:2: 'sites[0].scale_max' is missing or not a number");
}

TEST(HeatColour, RunsAlongThePalette) {
  EXPECT_EQ(plot::heat_colour(0.0), "#fde725");
  EXPECT_EQ(plot::heat_colour(0.5), "#26828e");
  EXPECT_EQ(plot::heat_colour(1.0), "#280037");
  EXPECT_EQ(plot::heat_colour(-3.0), "#fde725");  // clamped
  // Halfway from (253, 231, 37) to (181, 222, 43): (217, 226.5, 40), rounded half away from 0.
  EXPECT_EQ(plot::heat_colour(0.05), "#d9e328");
}

}  // namespace
}  // namespace mantissa::report
