#pragma once
// Internal: line and bar charts as inline SVG for the report (report.cpp). Pure string
// building: no script, and nothing fetched (text uses the reader's own sans-serif font).
// Every series is a <g class="series" data-run=... data-kind=... data-points=...>, so a test
// (or a reader of the page's DOM) can tell which series a chart holds.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mantissa::report::plot {

enum class Scale { linear, log10, log2 };

struct Range {
  double lo = 0, hi = 1;
};

// A line chart's geometry in pixels: the plot area spans x in [kLeft, kWidth - kRight] and
// y in [kTop, kHeight - kBottom] (y grows downward, as in SVG). A legend that needs more than
// two rows (many runs, long names) moves the plot area down by what it needs and makes the
// chart taller by as much: the legend never overlaps the plot.
inline constexpr double kWidth = 580, kHeight = 340;
inline constexpr double kLeft = 72, kRight = 18, kTop = 72, kBottom = 50;

// The width of text in the charts' sans-serif font at `size` pixels, estimated (the page uses
// the reader's font): 0.6 em per character, so it errs wide.
double text_width(std::string_view text, double size);
// `text` in lines of at most `width` pixels at `size`: broken at spaces, and a word longer
// than a line broken where it must be. Nothing is dropped.
std::vector<std::string> wrap_text(std::string_view text, double width, double size);

// The range an axis draws for data in [lo, hi]: linear ends on multiples of the tick step
// (from 0 when include_zero and the data is all on one side); log10 on whole decades, log2 on
// whole powers of two, one further where the data lies on a decade or power (so that it does
// not run along the frame). lo == hi widens to a visible range.
Range nice_range(double lo, double hi, Scale scale, bool include_zero = false);
// The tick values of a nice range: linear every 1, 2 or 5 x 10^k (4 to 10 of them); log axes
// at decades or powers of two, every 2^j-th one so that at most 9 are labelled.
std::vector<double> ticks(const Range& range, Scale scale);
// A tick's label as SVG text content: "0.25", "300", "0.001"; "10<tspan ..>-5</tspan>" and
// "2<tspan ..>15</tspan>" (a superscript exponent) on log axes.
std::string tick_label(double value, Scale scale, const Range& range);

// Data to pixels along one axis: range.lo maps to px_from, range.hi to px_to.
class AxisMap {
 public:
  AxisMap(Range range, Scale scale, double px_from, double px_to);
  double operator()(double value) const;
  // Finite and within +-1e300, and on a log axis at least 1e-300: beyond, a chart's
  // arithmetic overflows (or a log axis's decades underflow to 0); such values are not drawn.
  bool drawable(double value) const;

 private:
  double t(double value) const;
  Scale scale_;
  double t_lo_, t_hi_, px_from_, px_to_;
};

enum class Marker { none, circle, square, triangle, diamond, cross };

struct Style {
  std::string colour;  // "#0072B2"
  std::string dash;    // stroke-dasharray; empty: solid
  Marker marker = Marker::circle;
};

enum class Draw {
  line,       // a polyline (broken where a value is not drawable)
  markers,    // the style's marker at every point
  staircase,  // each point's value holds from the previous point's step up to its own
  band,       // the area between points (x, low) and `upper` (x, high), lightly filled
  ranges,     // a vertical line from each point's low to its `upper` value
};

struct Series {
  std::string run;   // data-run: the run the series belongs to
  std::string kind;  // data-kind: training, validation, skipped, ...
  Style style;
  Draw draw = Draw::line;
  double width = 2;                               // stroke width
  std::vector<std::pair<double, double>> points;  // (x, y) in data units
  std::vector<double> upper;  // band and ranges: each point's upper value (points: the lower)
};

struct LegendEntry {
  std::string label;
  Style style;
  bool line = true;  // a line sample with the marker; false: the marker alone
};

struct Axis {
  std::string label;
  Scale scale = Scale::linear;
  bool include_zero = false;
};

struct LineChart {
  std::string id, title;
  Axis x, y;
  std::vector<LegendEntry> legend;
  std::vector<Series> series;
  std::optional<double> reference_y;  // a dark horizontal line at this value (e.g. 0)
  std::string reference_label;        // written on it (in the legend when longer than a line)
  std::string empty_text;             // shown in the plot area when nothing is drawable
};

// <svg id=...> of kWidth x kHeight: title, legend, grid, ticks, axis labels, series.
std::string render(const LineChart& chart);

struct Bar {
  std::string run, label, value_text;
  double value = 0;  // the bar's length, relative to the largest value or range end
  Style style;
  std::optional<Range> range;  // a whisker over the bar (e.g. the slowest and fastest window)
};

struct BarChart {
  std::string id, title;
  std::vector<Bar> bars;
};

// Horizontal bars, one per run, labelled with the run (a label column as wide as the
// longest label needs, up to 220 pixels; longer labels wrap) and the value, with a whisker
// where a bar has a range.
std::string render(const BarChart& chart);

// A small standalone <svg> of a style's line and marker, for tables and text.
std::string swatch(const Style& style);

// Text for HTML and SVG: & < > " ' escaped, and what a page may not hold shown as its bytes,
// \xNN each, as the terminal shows them: control characters (but tab and newline),
// noncharacters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF) and bytes that are not UTF-8 (a path).
std::string escape(std::string_view text);

}  // namespace mantissa::report::plot
