// The report's charts (src/report/svg_plot.hpp): axis ranges and ticks, and points drawn at
// the pixels computed by hand from the plot area [72, 562] x [72, 290].
#include <gtest/gtest.h>

#include <cmath>

#include "svg_plot.hpp"

namespace mantissa::report::plot {
namespace {

// The plot area the tests compute with (svg_plot.hpp's geometry).
constexpr double kX0 = 72, kX1 = 562, kY0 = 290, kY1 = 72;

TEST(SvgPlot, TheGeometryIsTheOneTheTestsComputeWith) {
  EXPECT_EQ(kLeft, kX0);
  EXPECT_EQ(kWidth - kRight, kX1);
  EXPECT_EQ(kHeight - kBottom, kY0);
  EXPECT_EQ(kTop, kY1);
}

TEST(SvgPlot, LinearAxesMapProportionally) {
  const AxisMap x({0, 100}, Scale::linear, kX0, kX1);
  EXPECT_DOUBLE_EQ(x(0), 72);
  EXPECT_DOUBLE_EQ(x(25), 72 + 0.25 * 490);  // 194.5
  EXPECT_DOUBLE_EQ(x(100), 562);
  const AxisMap y({-0.2, 0.1}, Scale::linear, kY0, kY1);
  EXPECT_NEAR(y(0), 290 - 218 * 2.0 / 3.0, 1e-9);
}

TEST(SvgPlot, LogAxesPlaceDecadesAndOctavesEvenly) {
  const AxisMap y({0.01, 100}, Scale::log10, kY0, kY1);  // four decades over 218 pixels
  EXPECT_NEAR(y(0.01), 290, 1e-9);
  EXPECT_NEAR(y(0.1), 290 - 54.5, 1e-9);
  EXPECT_NEAR(y(1), 290 - 109, 1e-9);
  EXPECT_NEAR(y(10), 290 - 163.5, 1e-9);
  EXPECT_NEAR(y(100), 72, 1e-9);
  EXPECT_NEAR(y(std::sqrt(10.0)), 290 - 109 - 27.25, 1e-9);  // half a decade above 1
  const AxisMap s({1024, 1048576}, Scale::log2, kY0, kY1);   // 2^10 .. 2^20
  EXPECT_NEAR(s(32768), 290 - 0.5 * 218, 1e-9);              // 2^15: halfway
  EXPECT_NEAR(s(2048), 290 - 0.1 * 218, 1e-9);
  EXPECT_FALSE(s.drawable(0));
  EXPECT_FALSE(s.drawable(-1));
  EXPECT_FALSE(s.drawable(NAN));
  EXPECT_TRUE(AxisMap({0, 1}, Scale::linear, 0, 1).drawable(-1));
}

TEST(SvgPlot, NiceRanges) {
  auto eq = [](Range r, double lo, double hi) {
    EXPECT_NEAR(r.lo, lo, 1e-12 * std::max(1.0, std::abs(lo)));
    EXPECT_NEAR(r.hi, hi, 1e-12 * std::max(1.0, std::abs(hi)));
  };
  eq(nice_range(0.3, 4.7, Scale::linear), 0, 5);                 // step 1
  eq(nice_range(2.46, 5.53, Scale::linear), 2, 6);               // step 1
  eq(nice_range(10, 300, Scale::linear, true), 0, 300);          // step 100 (a fifth: 60)
  eq(nice_range(-0.17, 0.05, Scale::linear, true), -0.2, 0.05);  // step 0.05 (0.044)
  eq(nice_range(3, 3, Scale::linear), 2.6, 3.4);                 // widened by 10% each way
  eq(nice_range(0.5, 3.2, Scale::log10), 0.1, 10);
  eq(nice_range(1, 100, Scale::log10), 0.1, 1000);  // on decades: one more each way
  eq(nice_range(32768, 2147483648.0, Scale::log2), 16384, 4294967296.0);
  eq(nice_range(3000, 3000, Scale::log2), 2048, 4096);
}

TEST(SvgPlot, Ticks) {
  EXPECT_EQ(ticks({0, 5}, Scale::linear), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  const std::vector<double> small = ticks({0, 0.003}, Scale::linear);  // step 0.001
  ASSERT_EQ(small.size(), 4u);
  EXPECT_NEAR(small[3], 0.003, 1e-15);
  EXPECT_EQ(ticks({0.1, 1000}, Scale::log10), (std::vector<double>{0.1, 1, 10, 100, 1000}));
  // 2^14 .. 2^32 is 18 octaves: every 4th power is labelled.
  EXPECT_EQ(ticks({16384, 4294967296.0}, Scale::log2),
            (std::vector<double>{65536, 1048576, 16777216, 268435456, 4294967296.0}));
}

TEST(SvgPlot, TickLabels) {
  EXPECT_EQ(tick_label(0.002, Scale::linear, {0, 0.003}), "0.002");
  EXPECT_EQ(tick_label(200, Scale::linear, {0, 300}), "200");
  EXPECT_EQ(tick_label(2.5, Scale::linear, {2, 3}), "2.5");  // step 0.2
  EXPECT_EQ(tick_label(0.001, Scale::log10, {1e-5, 1}), "0.001");
  EXPECT_EQ(tick_label(1e-5, Scale::log10, {1e-5, 1}),
            "10<tspan dy=\"-5\" font-size=\"9\">-5</tspan>");
  EXPECT_EQ(tick_label(32768, Scale::log2, {1, 65536}),
            "2<tspan dy=\"-5\" font-size=\"9\">15</tspan>");
}

LineChart chart_with(Series s, Axis y = {"y"}) {
  LineChart c;
  c.id = "c";
  c.title = "t";
  c.x = {"step", Scale::linear, true};
  c.y = y;
  c.series.push_back(std::move(s));
  return c;
}

Series points(std::vector<std::pair<double, double>> p, Draw draw = Draw::line) {
  Series s;
  s.run = "float16";
  s.kind = "training";
  s.style = {"#D55E00", "2 3", Marker::triangle};
  s.draw = draw;
  s.points = std::move(p);
  return s;
}

// x: 0..100 (step 20), y: 1..5 (step 1): (50, 3) is at (72 + 245, 290 - 109).
TEST(SvgPlot, ASeriesIsDrawnThroughItsPixels) {
  const std::string svg = render(chart_with(points({{0, 1}, {50, 3}, {100, 5}})));
  EXPECT_NE(svg.find("<g class=\"series\" data-run=\"float16\" data-kind=\"training\" "
                     "data-points=\"3\"><path d=\"M72.0 290.0L317.0 181.0L562.0 72.0\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("stroke=\"#D55E00\""), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"2 3\""), std::string::npos);
  EXPECT_EQ(svg.rfind("<svg id=\"c\"", 0), 0u);
}

TEST(SvgPlot, AValueThatIsNotDrawableBreaksTheLine) {
  const std::string svg = render(chart_with(points({{0, 1}, {50, NAN}, {100, 5}})));
  EXPECT_NE(svg.find("data-points=\"2\"><path d=\"M72.0 290.0M562.0 72.0\""), std::string::npos)
      << svg;
  // On a log axis zero has no place either; 1..100 lies on decades: 0.1..1000, four of them.
  const std::string log =
      render(chart_with(points({{0, 1}, {50, 0}, {100, 100}}), {"y", Scale::log10}));
  EXPECT_NE(log.find("data-points=\"2\"><path d=\"M72.0 235.5M562.0 126.5\""), std::string::npos)
      << log;
}

TEST(SvgPlot, MarkersAndStaircases) {
  const std::string m = render(chart_with(points({{50, 3}, {0, 1}, {100, 5}}, Draw::markers)));
  // A triangle around (317, 181): apex 4.4 pixels above.
  EXPECT_NE(m.find("<path d=\"M317.0 176.6L"), std::string::npos) << m;
  const std::string s = render(chart_with(points({{0, 1}, {100, 5}}, Draw::staircase)));
  EXPECT_NE(s.find("<path d=\"M72.0 290.0V72.0H562.0\""), std::string::npos) << s;
}

TEST(SvgPlot, NothingToDrawSaysSo) {
  LineChart c = chart_with(points({}));
  c.empty_text = "no run scales its loss";
  EXPECT_NE(render(c).find(">no run scales its loss</text>"), std::string::npos);
}

TEST(SvgPlot, BarsAreProportional) {
  BarChart b{"bars", "Throughput", {}};
  b.bars.push_back(
      {"float32", "float32", "100 tokens/s", 100, {"#000000", "", Marker::circle}, std::nullopt});
  b.bars.push_back(
      {"float16", "float16", "50 tokens/s", 50, {"#D55E00", "", Marker::circle}, std::nullopt});
  const std::string svg = render(b);
  // 330 pixels for the largest (580 - 120 label - 130 value), half for half.
  EXPECT_NE(svg.find("width=\"330.0\" height=\"20.0\" fill=\"#000000\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("width=\"165.0\" height=\"20.0\" fill=\"#D55E00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find(">50 tokens/s</text>"), std::string::npos);
}

// A whisker from 50 to 200 makes 200 the full 330 pixels: the bar of 100 gets 165, and the
// whisker runs from 120 + 82.5 to 120 + 330 across the first row's middle (34 + 15 - 2).
TEST(SvgPlot, AWhiskerSpansItsRange) {
  BarChart b{"bars", "Throughput", {}};
  b.bars.push_back(
      {"float32", "float32", "100 tokens/s", 100, {"#000000", "", Marker::circle}, Range{50, 200}});
  const std::string svg = render(b);
  EXPECT_NE(svg.find("width=\"165.0\" height=\"20.0\" fill=\"#000000\""), std::string::npos) << svg;
  EXPECT_NE(
      svg.find("<path class=\"range\" d=\"M202.5 47.0H450.0M202.5 41.0V53.0M450.0 41.0V53.0\""),
      std::string::npos)
      << svg;
}

TEST(SvgPlot, TextIsEscaped) {
  EXPECT_EQ(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

// The tenth audit (fuzz_metrics): strings from a metrics file reached the page with their
// control bytes (a NUL, an escape sequence), which an HTML parser refuses. Control
// characters (but tab and newline), noncharacters and bytes that are not UTF-8 are shown as
// their bytes, \xNN each; other text, multi-byte characters included, stays as it is.
TEST(SvgPlot, ControlBytesAndBytesThatAreNotUtf8AreShownAsBytes) {
  EXPECT_EQ(escape(std::string("a\0b\x1b[31m\x7f\r", 10)), "a\\x00b\\x1b[31m\\x7f\\x0d");
  EXPECT_EQ(escape("tab\tnew\nline"), "tab\tnew\nline");
  EXPECT_EQ(escape("\xc2\x85 \xef\xbf\xbe \xef\xb7\x90"),
            "\\xc2\\x85 \\xef\\xbf\\xbe \\xef\\xb7\\x90");
  EXPECT_EQ(escape("\xff<\xc3"), "\\xff&lt;\\xc3");  // a stray byte, a character cut short
  EXPECT_EQ(escape("\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"),
            "\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
}

// The tenth audit: a series from -1e308 to 1e308 spans more than a double holds, and its
// points were drawn at NaN pixels; values past +-1e300 (and below 1e-300 on a log axis,
// whose decades underflow to 0) are not drawn, as a non-finite value is not.
TEST(SvgPlot, ValuesPastAChartsRangeAreNotDrawn) {
  const AxisMap linear({0, 1}, Scale::linear, kY0, kY1);
  EXPECT_TRUE(linear.drawable(1e300));
  EXPECT_TRUE(linear.drawable(-1e300));
  EXPECT_FALSE(linear.drawable(1e301));
  EXPECT_FALSE(linear.drawable(-1.7976931348623157e308));
  const AxisMap log({1, 10}, Scale::log2, kY0, kY1);
  EXPECT_TRUE(log.drawable(1e-300));
  EXPECT_FALSE(log.drawable(5e-324));
  const std::string svg =
      render(chart_with(points({{0, 1e308}, {25, -1e308}, {50, 1}, {75, 5e-324}, {100, 5}})));
  // x: 0..100, y: 0..5 (the drawable values 5e-324, 1 and 5 from 0): (50, 1) at (317, 290 -
  // 218 / 5), (75, 5e-324) on the zero line.
  EXPECT_NE(svg.find("data-points=\"3\"><path d=\"M317.0 246.4L439.5 290.0L562.0 72.0\""),
            std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

// The tenth audit: steps 10^17 and 10^17 + 16 made ticks 5 apart at 2 x 10^16 fives, where
// adding 1 to a double no longer counts, and the tick loop never ended (until memory ran
// out). Values closer than 10^-12 of their size get the range of equal values (10% each
// way), and ticks() ends for any range.
TEST(SvgPlot, ValuesTooCloseToTellApartGetTheRangeOfEqualValues) {
  const Range r = nice_range(1e17, 1e17 + 16, Scale::linear);
  EXPECT_EQ(r.lo, 9e16);
  EXPECT_EQ(r.hi, 1.1e17);
  EXPECT_EQ(ticks(r, Scale::linear), (std::vector<double>{9e16, 9.5e16, 1e17, 1.05e17, 1.1e17}));
  EXPECT_LE(ticks({1e17, 1e17 + 16}, Scale::linear).size(), 64u);
  const Range near_zero = nice_range(0, 1e-9, Scale::linear);  // apart from 0: not widened
  EXPECT_NEAR(near_zero.hi, 1e-9, 1e-24);
}

}  // namespace
// Text in lines of at most a width (0.6 em a character at 12 px: 7.2 pixels): broken at
// spaces, a word longer than a line broken inside it, a multi-byte character never split.
TEST(SvgPlot, LongTextWrapsAndNothingIsDropped) {
  EXPECT_DOUBLE_EQ(text_width("float16", 12), 7 * 7.2);
  EXPECT_DOUBLE_EQ(text_width("a \u2192 b", 10), 5 * 6.0) << "an arrow is one character";
  EXPECT_EQ(wrap_text("float16 (seed-2)", 200, 12), std::vector<std::string>{"float16 (seed-2)"});
  EXPECT_EQ(wrap_text("float16 (seed-2)", 60, 12),
            (std::vector<std::string>{"float16", "(seed-2)"}));
  // 10 characters a line at 72 pixels.
  EXPECT_EQ(wrap_text("ab abcdefghijklmnopqrstuvwxy z", 72, 12),
            (std::vector<std::string>{"ab", "abcdefghij", "klmnopqrst", "uvwxy z"}));
  EXPECT_EQ(wrap_text("\u2192\u2192\u2192", 2 * 7.2, 12),
            (std::vector<std::string>{"\u2192\u2192", "\u2192"}));
  EXPECT_EQ(wrap_text("", 50, 12), std::vector<std::string>{""});
  // A long word breaks after a '-', '_', '/' or '.' in the second half of what fits.
  EXPECT_EQ(wrap_text("abcdef-ghijkl-mn", 72, 12),
            (std::vector<std::string>{"abcdef-", "ghijkl-mn"}));
  EXPECT_EQ(wrap_text("ab-cdefghijklmnop", 72, 12),
            (std::vector<std::string>{"ab-cdefghi", "jklmnop"}));
}

// A legend of more rows than fit above kTop moves the plot area down and makes the chart
// taller by as much; a bar chart's label column widens for long labels (up to 220 pixels)
// and wraps longer ones.
TEST(SvgPlot, ALongLegendPushesThePlotDownAndLongBarLabelsWrap) {
  LineChart c;
  c.id = "c";
  for (char name = 'a'; name < 'a' + 12; ++name)
    c.legend.push_back({std::string("run ") + name, {"#000", "", Marker::circle}});
  Series s;
  s.run = "r";
  s.kind = "k";
  s.style = {"#000", "", Marker::none};
  s.points = {{0, 0}, {1, 1}};
  c.series.push_back(s);
  const std::string svg = render(c);
  // 12 entries of 36 + 5 * 7.2 + 10 = 82 pixels from x = 72 in rows ending at 562: five a
  // row, three rows from y = 40, 16 apart: the last centred at 72, its text to 79; the plot
  // starts 9 below, at 88, and the chart is 16 pixels taller than 340.
  EXPECT_NE(svg.find("<rect x=\"72.0\" y=\"88.0\" width=\"490.0\" height=\"218.0\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("height=\"356.0\""), std::string::npos);
  // Two rows (up to ten entries) still fit above the usual plot area.
  c.legend.resize(10);
  EXPECT_NE(render(c).find("<rect x=\"72.0\" y=\"72.0\" width=\"490.0\" height=\"218.0\""),
            std::string::npos);
  BarChart b{"b", "t", {}};
  b.bars.push_back(
      {"r", "a label of thirty characters!!", "1", 1.0, {"#000", "", Marker::none}, {}});
  // 30 characters: 216 + 16 = 232 pixels, more than 220: the column is 220, the label wraps
  // at 204 pixels (28 characters) onto two lines.
  const std::string bars = render(b);
  EXPECT_NE(bars.find("<rect x=\"220.0\""), std::string::npos) << bars;
  EXPECT_NE(
      bars.find(">a label of thirty</tspan><tspan x=\"212.0\" dy=\"14.0\">characters!!</tspan>"),
      std::string::npos)
      << bars;
}

}  // namespace mantissa::report::plot
