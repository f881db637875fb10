// Series of more points than a plot has pixel columns (src/report/series_thinning.hpp): what
// each column shows is kept (its first, lowest, highest and last point; a band's or a range's
// lowest and highest value), breaks stay breaks, and a page of a long run stays small.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "mantissa/report/metrics.hpp"
#include "mantissa/report/report.hpp"
#include "series_thinning.hpp"
#include "svg_plot.hpp"

namespace mantissa::report::plot {
namespace {

constexpr double kX0 = 72, kX1 = 562;  // the plot area's columns (svg_plot.hpp)

TEST(SeriesThinning, ShortSeriesAreDrawnWhole) {
  Series s;
  for (int k = 0; k < 2048; ++k)
    s.points.push_back({static_cast<double>(k), static_cast<double>(k % 5)});
  const AxisMap mx({0, 2047}, Scale::linear, kX0, kX1), my({0, 4}, Scale::linear, 290, 72);
  EXPECT_EQ(thinned(s, mx, my).points, s.points);
}

// 100,000 points over 490 pixel columns (about 204 each): a sawtooth, a spike, a gap.
TEST(SeriesThinning, EachColumnKeepsItsEndsAndExtremesAndBreaksStay) {
  Series s;
  for (int k = 0; k < 100000; ++k) {
    const double y = k == 50001 ? 1000.0 : k >= 70000 && k < 70010 ? NAN : (k * 37) % 101;
    s.points.push_back({static_cast<double>(k), y});
  }
  const AxisMap mx({0, 99999}, Scale::linear, kX0, kX1), my({0, 1000}, Scale::linear, 290, 72);
  const Series t = thinned(s, mx, my);
  EXPECT_LE(t.points.size(), 4u * 491 + 8);
  const std::set<std::pair<double, double>> kept(t.points.begin(), t.points.end());
  // Each column's first, lowest, highest and last point, found here by brute force over the
  // drawable runs between breaks.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> columns;  // (run, px)
  int run = 0;
  for (const auto& p : s.points) {
    if (std::isnan(p.second)) {
      run = 1;  // the points after the gap are a run of their own
      continue;
    }
    columns[{run, static_cast<int>(std::floor(kX0 + p.first / 99999 * (kX1 - kX0)))}].push_back(p);
  }
  for (const auto& [column, points] : columns) {
    // Its first and last point, and among the points kept from it its lowest and highest
    // value (a value may repeat: which of its points is kept does not matter).
    EXPECT_TRUE(kept.count(points.front())) << "column " << column.second;
    EXPECT_TRUE(kept.count(points.back())) << "column " << column.second;
    double low = INFINITY, high = -INFINITY, kept_low = INFINITY, kept_high = -INFINITY;
    for (const auto& p : points) {
      low = std::min(low, p.second);
      high = std::max(high, p.second);
      if (kept.count(p)) {
        kept_low = std::min(kept_low, p.second);
        kept_high = std::max(kept_high, p.second);
      }
    }
    EXPECT_EQ(kept_low, low) << "column " << column.second;
    EXPECT_EQ(kept_high, high) << "column " << column.second;
  }
  EXPECT_TRUE(kept.count({50001, 1000.0}));
  EXPECT_EQ(std::count_if(t.points.begin(), t.points.end(),
                          [](const auto& p) { return std::isnan(p.second); }),
            1);  // the gap: one point that breaks the line
}

TEST(SeriesThinning, ABandKeepsEachColumnsLowestAndHighestValue) {
  Series s;
  s.draw = Draw::band;
  for (int k = 0; k < 10000; ++k) {
    s.points.push_back({static_cast<double>(k), -static_cast<double>(k % 13)});
    s.upper.push_back(static_cast<double>(k % 17));
  }
  const AxisMap mx({0, 9999}, Scale::linear, kX0, kX1), my({-20, 20}, Scale::linear, 290, 72);
  const Series t = thinned(s, mx, my);
  ASSERT_EQ(t.points.size(), t.upper.size());
  EXPECT_LE(t.points.size(), 491u);
  // 20 or 21 points a column hold every residue (but the last column: x = 9999 alone).
  for (std::size_t k = 0; k + 1 < t.points.size(); ++k) {
    EXPECT_EQ(t.points[k].second, -12) << k;
    EXPECT_EQ(t.upper[k], 16) << k;
  }
  EXPECT_EQ(t.points.back(), std::make_pair(9999.0, -2.0));
  EXPECT_EQ(t.upper.back(), 3.0);
}

}  // namespace
}  // namespace mantissa::report::plot

namespace mantissa::report {
namespace {

// A run logged at each of 200,000 steps: every point counted, the page well under a megabyte
// (all the points would take some 7 MB).
TEST(SeriesThinning, ALongRunMakesASmallPage) {
  std::string text =
      R"({"run":{"format":"float32","loss_scaling":"none","model":"gpt","parameters":10,)"
      R"("unit":"tokens","items_per_step":4,"start_step":0,"max_steps":200000,"seed":1,)"
      R"("cpu":"CPU","settings":[]}})"
      "\n";
  for (int k = 1; k <= 200000; ++k) {
    text += R"({"step":)" + std::to_string(k) + R"(,"loss":)" + std::to_string(1.0 + k % 7) +
            R"(,"lr":0.1,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":10.0})" + "\n";
  }
  const std::string page = render_report({parse_metrics(text, "runs/long/metrics.jsonl")});
  EXPECT_NE(page.find("data-kind=\"training\" data-points=\"200000\""), std::string::npos);
  EXPECT_LT(page.size(), 1000000u);
}

}  // namespace
}  // namespace mantissa::report
