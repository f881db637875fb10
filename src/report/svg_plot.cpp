#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "mantissa/escaped_text.hpp"
#include "mantissa/utf8_text.hpp"
#include "series_thinning.hpp"

namespace mantissa::report::plot {
namespace {

constexpr double kPlotRight = kWidth - kRight;
constexpr double kPlotBottom = kHeight - kBottom;
constexpr double kMarkerRadius = 4;
constexpr double kLegendTop = 40, kLegendRowHeight = 16;
constexpr const char* kFont = "font-family=\"sans-serif\"";

// Whether a page may hold the character as it is: not a control character (but a tab or a
// newline) and not a noncharacter, which HTML's parser reports as errors.
bool html_character(std::uint32_t c) {
  if (c < 0x20) return c == '\t' || c == '\n';
  if (c >= 0x7f && c <= 0x9f) return false;
  return !(c >= 0xfdd0 && c <= 0xfdef) && (c & 0xfffe) != 0xfffe;
}

double log_base(double v, Scale s) {
  return s == Scale::log2 ? std::log2(v) : std::log10(v);
}
double base(Scale s) {
  return s == Scale::log2 ? 2.0 : 10.0;
}

// AxisMap::drawable: finite, within +-kLargestDrawn, and on a log axis at least
// kSmallestLogDrawn. Past these bounds a chart's arithmetic would overflow (a range from
// -1e308 to 1e308 is wider than any double) or its decades underflow to 0.
constexpr double kLargestDrawn = 1e300, kSmallestLogDrawn = 1e-300;
bool drawable_on(double v, Scale s) {
  return std::isfinite(v) && std::abs(v) <= kLargestDrawn &&
         (s == Scale::linear || v >= kSmallestLogDrawn);
}

// The smallest of 1, 2, 5 x 10^k at least `raw`.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-12)) return m * magnitude;
  }
  return 10.0 * magnitude;
}

double linear_step(const Range& r) {
  return nice_step((r.hi - r.lo) / 5.0);
}

// Every `stride`-th exponent of a log range, stride a power of two, at most 9 ticks.
int log_stride(const Range& r, Scale s) {
  const double span = log_base(r.hi, s) - log_base(r.lo, s);
  int stride = 1;
  while (span / stride > 8) stride *= 2;
  return stride;
}

std::string px(double v) {
  return fmt::format("{:.1f}", v);
}

std::string superscript(std::string_view mantissa, int exponent) {
  return fmt::format("{}<tspan dy=\"-5\" font-size=\"9\">{}</tspan>", mantissa, exponent);
}

std::string marker_svg(Marker m, double x, double y, const std::string& colour) {
  const double r = kMarkerRadius;
  const std::string fill = fmt::format("fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.8\"", colour);
  switch (m) {
    case Marker::none:
      return "";
    case Marker::circle:
      return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>", px(x), px(y), px(r), fill);
    case Marker::square:
      return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>", px(x - r * 0.9),
                         px(y - r * 0.9), px(r * 1.8), px(r * 1.8), fill);
    case Marker::triangle:
      return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\" {}/>", px(x), px(y - r * 1.1),
                         px(x + r * 1.05), px(y + r * 0.8), px(x - r * 1.05), px(y + r * 0.8),
                         fill);
    case Marker::diamond:
      return fmt::format("<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" {}/>", px(x), px(y - r * 1.2),
                         px(x + r), px(y), px(x), px(y + r * 1.2), px(x - r), px(y), fill);
    case Marker::cross:
      return fmt::format(
          "<path d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"{}\" stroke-width=\"2\" fill=\"none\"/>",
          px(x - r), px(y - r), px(x + r), px(y + r), px(x - r), px(y + r), px(x + r), px(y - r),
          colour);
  }
  return "";
}

std::string dash_attribute(const Style& s) {
  return s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"";
}

// A 30-pixel line sample (if `line`) with the marker in its middle, from (x, y).
std::string sample_svg(const Style& s, double x, double y, bool line) {
  std::string out;
  if (line) {
    out += fmt::format("<path d=\"M{} {}H{}\" stroke=\"{}\" stroke-width=\"2\" fill=\"none\"{}/>",
                       px(x), px(y), px(x + 30), s.colour, dash_attribute(s));
  }
  return out + marker_svg(s.marker, x + 15, y, s.colour);
}

// Lines of text from (x, y), one below the other, the first centred on y; `extra`: more
// attributes (e.g. bold).
std::string text_lines(const std::vector<std::string>& lines, double x, double y, double size,
                       const char* anchor, const char* extra = "") {
  std::string out = fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{:g}\" text-anchor=\"{}\"{}>",
                                px(x), px(y), size, anchor, extra);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += fmt::format("<tspan x=\"{}\" dy=\"{}\">{}</tspan>", px(x),
                       i == 0 ? std::string("0.32em") : px(size + 2), escape(lines[i]));
  }
  return out + "</text>";
}

struct Legend {
  std::string svg;
  double bottom = kLegendTop;  // the lowest pixel its text reaches
};

// Entries left to right in rows across the plot's width from `top`; a label too long for a
// row wraps.
Legend legend_svg(const std::vector<LegendEntry>& entries, double top) {
  constexpr double kFontSize = 12, kSample = 36, kGap = 10;
  Legend legend;
  legend.bottom = top;
  legend.svg = "<g class=\"legend\">";
  double x = kLeft, y = top, row_height = kLegendRowHeight;
  for (const LegendEntry& e : entries) {
    const std::vector<std::string> lines =
        wrap_text(e.label, kPlotRight - kLeft - kSample - kGap, kFontSize);
    double text = 0;
    for (const std::string& l : lines) text = std::max(text, text_width(l, kFontSize));
    const double w = kSample + text + kGap;
    if (x + w > kPlotRight && x > kLeft) {
      x = kLeft;
      y += row_height;
      row_height = kLegendRowHeight;
    }
    const double h = static_cast<double>(lines.size()) * (kFontSize + 2);
    row_height = std::max(row_height, h + 2);
    legend.svg += sample_svg(e.style, x, y, e.line);
    legend.svg += text_lines(lines, x + kSample, y, kFontSize, "start");
    // Each line is centred on its y: the last one reaches half a line below it.
    legend.bottom = std::max(legend.bottom, y + h - kFontSize / 2 - 2 + 1);
    x += w;
  }
  legend.svg += "</g>";
  return legend;
}

// The plot area's top: kTop, or lower when the legend reaches further down.
double plot_top(const Legend& legend) {
  return std::max(kTop, legend.bottom + 9);
}

std::string path_of(const Series& s, const AxisMap& mx, const AxisMap& my) {
  std::string d;
  bool open = false;
  for (const auto& [x, y] : s.points) {
    if (!mx.drawable(x) || !my.drawable(y)) {
      open = false;
      continue;
    }
    const double X = mx(x), Y = my(y);
    if (!open) {
      d += fmt::format("M{:.1f} {:.1f}", X, Y);
    } else if (s.draw == Draw::staircase) {
      d += fmt::format("V{:.1f}H{:.1f}", Y, X);
    } else {
      d += fmt::format("L{:.1f} {:.1f}", X, Y);
    }
    open = true;
  }
  return d;
}

// A band's outline: along the lower values, back along the upper ones; a point whose values
// are not both drawable splits it.
std::string band_path(const Series& s, const AxisMap& mx, const AxisMap& my) {
  std::string d;
  std::size_t i = 0;
  while (i < s.points.size()) {
    std::size_t end = i;
    const auto ok = [&](std::size_t k) {
      return k < s.upper.size() && mx.drawable(s.points[k].first) &&
             my.drawable(s.points[k].second) && my.drawable(s.upper[k]);
    };
    while (end < s.points.size() && ok(end)) ++end;
    if (end > i) {
      for (std::size_t k = i; k < end; ++k) {
        d += fmt::format("{}{:.1f} {:.1f}", k == i ? "M" : "L", mx(s.points[k].first),
                         my(s.points[k].second));
      }
      for (std::size_t k = end; k-- > i;)
        d += fmt::format("L{:.1f} {:.1f}", mx(s.points[k].first), my(s.upper[k]));
      d += "Z";
    }
    i = end + 1;
  }
  return d;
}

// The points of a series that can be drawn.
std::size_t drawable_points(const Series& s, const AxisMap& mx, const AxisMap& my) {
  std::size_t drawable = 0;
  for (const auto& [x, y] : s.points) drawable += mx.drawable(x) && my.drawable(y) ? 1 : 0;
  return drawable;
}

// A series' <g>: data-points says how many points it has that can be drawn (`drawable`, of the
// series before thinning), and `s` (thinned) draws them.
std::string series_svg(const Series& s, std::size_t drawable, const AxisMap& mx,
                       const AxisMap& my) {
  std::string out =
      fmt::format("<g class=\"series\" data-run=\"{}\" data-kind=\"{}\" data-points=\"{}\">",
                  escape(s.run), escape(s.kind), drawable);
  if (s.draw == Draw::band) {
    out += fmt::format("<path d=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>",
                       band_path(s, mx, my), s.style.colour);
  } else if (s.draw == Draw::ranges) {
    std::string d;
    for (std::size_t k = 0; k < s.points.size() && k < s.upper.size(); ++k) {
      const auto& [x, lo] = s.points[k];
      if (!mx.drawable(x) || !my.drawable(lo) || !my.drawable(s.upper[k])) continue;
      d += fmt::format("M{:.1f} {:.1f}V{:.1f}", mx(x), my(lo), my(s.upper[k]));
    }
    out += fmt::format("<path d=\"{}\" stroke=\"{}\" stroke-width=\"1.5\" fill=\"none\"/>", d,
                       s.style.colour);
  } else if (s.draw == Draw::markers) {
    for (const auto& [x, y] : s.points) {
      if (mx.drawable(x) && my.drawable(y))
        out += marker_svg(s.style.marker, mx(x), my(y), s.style.colour);
    }
  } else {
    out += fmt::format(
        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
        "stroke-linejoin=\"round\"{}/>",
        path_of(s, mx, my), s.style.colour, px(s.width), dash_attribute(s.style));
  }
  return out + "</g>";
}

// The data range of one axis over every drawable value (log axes: the positive ones).
std::optional<Range> data_range(const std::vector<Series>& series, bool x_axis, Scale scale) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const auto take = [&](double v) {
    if (!drawable_on(v, scale)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const Series& s : series) {
    for (const auto& p : s.points) take(x_axis ? p.first : p.second);
    if (!x_axis) {
      for (const double v : s.upper) take(v);
    }
  }
  if (lo > hi) return std::nullopt;
  return Range{lo, hi};
}

// The axes of a plot area from `top` to `bottom`; the chart is `height` tall.
std::string axis_svg(const Range& xr, const Axis& x, const Range& yr, const Axis& y,
                     const AxisMap& mx, const AxisMap& my, double top, double bottom,
                     double height) {
  std::string out = "<g class=\"axes\" font-size=\"11\" fill=\"#222\">";
  for (const double t : ticks(xr, x.scale)) {
    const double X = mx(t);
    out += fmt::format("<path d=\"M{} {}V{}\" stroke=\"#ddd\"/>", px(X), px(top), px(bottom));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", px(X),
                       px(bottom + 15), tick_label(t, x.scale, xr));
  }
  for (const double t : ticks(yr, y.scale)) {
    const double Y = my(t);
    out += fmt::format("<path d=\"M{} {}H{}\" stroke=\"#ddd\"/>", px(kLeft), px(Y), px(kPlotRight));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dy=\"0.32em\">{}</text>",
                       px(kLeft - 6), px(Y), tick_label(t, y.scale, yr));
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#777\"/>",
      px(kLeft), px(top), px(kPlotRight - kLeft), px(bottom - top));
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{}</text>",
                     px((kLeft + kPlotRight) / 2), px(height - 10), escape(x.label));
  const double mid = (top + bottom) / 2;
  out += fmt::format(
      "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" "
      "transform=\"rotate(-90 14 {})\">{}</text>",
      px(mid), px(mid), escape(y.label));
  return out + "</g>";
}

}  // namespace

double text_width(std::string_view text, double size) {
  double chars = 0;
  for (const char ch : text) chars += (static_cast<unsigned char>(ch) & 0xC0) == 0x80 ? 0 : 1;
  return chars * 0.6 * size;
}

std::vector<std::string> wrap_text(std::string_view text, double width, double size) {
  const auto fits = [&](std::string_view t) { return text_width(t, size) <= width; };
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t space = text.find(' ', at);
    std::string_view word =
        text.substr(at, space == std::string_view::npos ? text.npos : space - at);
    at = space == std::string_view::npos ? text.size() : space + 1;
    const std::string joined = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (fits(joined)) {
      line = joined;
      continue;
    }
    if (!line.empty()) lines.push_back(std::exchange(line, ""));
    // A word longer than a line: as many characters (whole UTF-8 sequences) as fit, a line
    // each, ending after a '-', '_', '/' or '.' where one falls in the second half of them.
    while (!fits(word)) {
      std::size_t cut = 0, after_mark = 0;
      for (std::size_t k = 1; k <= word.size(); ++k) {
        const bool boundary =
            k == word.size() || (static_cast<unsigned char>(word[k]) & 0xC0) != 0x80;
        if (!boundary || !fits(word.substr(0, k))) continue;
        cut = k;
        if (std::string_view("-_/.").find(word[k - 1]) != std::string_view::npos) after_mark = k;
      }
      if (cut == 0) cut = 1;
      if (after_mark * 2 > cut) cut = after_mark;
      lines.emplace_back(word.substr(0, cut));
      word.remove_prefix(cut);
    }
    line = std::string(word);
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

Range nice_range(double lo, double hi, Scale scale, bool include_zero) {
  if (scale == Scale::linear) {
    if (include_zero) {
      lo = std::min(lo, 0.0);
      hi = std::max(hi, 0.0);
    }
    // Values equal, or closer than a millionth of a millionth of their size (ticks that far
    // apart would read alike, and count past what a double counts exactly): 10% each way.
    if (hi - lo <= std::max(std::abs(lo), std::abs(hi)) * 1e-12) {
      const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
      lo -= pad;
      hi = std::max(hi, lo + 2 * pad);
    }
    const double step = nice_step((hi - lo) / 5.0);
    return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
  }
  // Whole decades or octaves, one more where the data would touch the frame.
  const double t_lo = log_base(lo, scale), t_hi = log_base(hi, scale);
  double e_lo = std::floor(t_lo + 1e-9), e_hi = std::ceil(t_hi - 1e-9);
  if (t_lo - e_lo < 1e-9) e_lo -= 1;
  if (e_hi - t_hi < 1e-9) e_hi += 1;
  return {std::pow(base(scale), e_lo), std::pow(base(scale), e_hi)};
}

std::vector<double> ticks(const Range& r, Scale scale) {
  std::vector<double> out;
  if (scale == Scale::linear) {
    const double step = linear_step(r);
    const double first = std::ceil(r.lo / step - 1e-9);
    // A nice range holds at most 11 ticks; the bound keeps any other range from counting on.
    for (double k = first; k * step <= r.hi + step * 1e-9 && out.size() < 64; k += 1) {
      out.push_back(std::abs(k * step) < step * 1e-9 ? 0.0 : k * step);
    }
    return out;
  }
  const int stride = log_stride(r, scale);
  const int e_lo = static_cast<int>(std::ceil(log_base(r.lo, scale) - 1e-9));
  const int e_hi = static_cast<int>(std::floor(log_base(r.hi, scale) + 1e-9));
  for (int e = e_lo; e <= e_hi; ++e) {
    if (e % stride == 0) out.push_back(std::pow(base(scale), e));
  }
  return out;
}

std::string tick_label(double v, Scale scale, const Range& r) {
  if (scale == Scale::linear) {
    const double step = linear_step(r);
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    return fmt::format("{:.{}f}", v, decimals);
  }
  const int e = static_cast<int>(std::lround(log_base(v, scale)));
  if (scale == Scale::log2) return superscript("2", e);
  if (e >= -3 && e <= 4) return fmt::format("{:g}", v);
  return superscript("10", e);
}

AxisMap::AxisMap(Range range, Scale scale, double px_from, double px_to)
    : scale_(scale), px_from_(px_from), px_to_(px_to) {
  t_lo_ = t(range.lo);
  t_hi_ = t(range.hi);
}

double AxisMap::t(double v) const {
  return scale_ == Scale::linear ? v : log_base(v, scale_);
}

double AxisMap::operator()(double v) const {
  return px_from_ + (t(v) - t_lo_) / (t_hi_ - t_lo_) * (px_to_ - px_from_);
}

bool AxisMap::drawable(double v) const {
  return drawable_on(v, scale_);
}

std::string render(const LineChart& c) {
  const std::optional<Range> xd = data_range(c.series, true, c.x.scale);
  std::optional<Range> yd = data_range(c.series, false, c.y.scale);
  if (yd && c.reference_y)
    yd = Range{std::min(yd->lo, *c.reference_y), std::max(yd->hi, *c.reference_y)};
  const Range xr = xd ? nice_range(xd->lo, xd->hi, c.x.scale, c.x.include_zero)
                      : nice_range(c.x.scale == Scale::linear ? 0 : 1,
                                   c.x.scale == Scale::linear ? 1 : 10, c.x.scale);
  const Range yr = yd ? nice_range(yd->lo, yd->hi, c.y.scale, c.y.include_zero)
                      : nice_range(c.y.scale == Scale::linear ? 0 : 1,
                                   c.y.scale == Scale::linear ? 1 : 10, c.y.scale);
  // A title too long for the chart's width wraps (bold text: estimated 10% wider) and moves
  // the legend down by its extra lines.
  constexpr double kTitleSize = 14, kTitleY = 15;
  const std::vector<std::string> title = wrap_text(c.title, kPlotRight - kLeft, kTitleSize * 1.1);
  const double title_extra = static_cast<double>(title.size() - 1) * (kTitleSize + 2);
  // The reference line's label goes on it when it fits one line, else into the legend.
  constexpr double kReferenceSize = 11;
  const std::vector<std::string> reference_label =
      wrap_text(c.reference_label, kPlotRight - kLeft - 8, kReferenceSize);
  const bool label_on_line = reference_label.size() == 1;
  std::vector<LegendEntry> entries = c.legend;
  if (c.reference_y && !label_on_line)
    entries.push_back({c.reference_label, {"#000000", "", Marker::none}, true});
  const Legend legend = legend_svg(entries, kLegendTop + title_extra);
  const double top = plot_top(legend), bottom = top + (kPlotBottom - kTop);
  const double height = bottom + kBottom;
  const AxisMap mx(xr, c.x.scale, kLeft, kPlotRight);
  const AxisMap my(yr, c.y.scale, bottom, top);
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" {} "
      "role=\"img\" aria-label=\"{}\">",
      escape(c.id), kWidth, px(height), kWidth, px(height), kFont, escape(c.title));
  out += text_lines(title, kLeft, kTitleY, kTitleSize, "start", " font-weight=\"bold\"");
  out += legend.svg;
  out += axis_svg(xr, c.x, yr, c.y, mx, my, top, bottom, height);
  if (c.reference_y) {
    const double Y = my(*c.reference_y);
    out += fmt::format(
        "<path class=\"reference\" d=\"M{} {}H{}\" stroke=\"#000\" stroke-width=\"1.2\"/>",
        px(kLeft), px(Y), px(kPlotRight));
    if (label_on_line) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{:g}\">{}</text>", px(kLeft + 4),
                         px(Y - 4), kReferenceSize, escape(c.reference_label));
    }
  }
  bool any = false;
  for (const Series& s : c.series) {
    const std::size_t drawable = drawable_points(s, mx, my);
    out += series_svg(thinned(s, mx, my), drawable, mx, my);
    any = any || drawable > 0;
  }
  if (!any && !c.empty_text.empty()) {
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" fill=\"#555\">{}</text>",
        px((kLeft + kPlotRight) / 2), px((top + bottom) / 2), escape(c.empty_text));
  }
  return out + "</svg>";
}

std::string render(const BarChart& c) {
  constexpr double kFontSize = 12, kMinLabel = 120, kMaxLabel = 220, value_width = 130,
                   base_row = 30, top = 34;
  // The label column: as wide as the longest label needs, within [120, 220]; longer wrap.
  double label_width = kMinLabel;
  for (const Bar& b : c.bars)
    label_width = std::max(label_width, std::min(kMaxLabel, text_width(b.label, kFontSize) + 16));
  std::vector<std::vector<std::string>> labels;
  double height = top + 8;
  for (const Bar& b : c.bars) {
    labels.push_back(wrap_text(b.label, label_width - 16, kFontSize));
    height += std::max(base_row, static_cast<double>(labels.back().size()) * (kFontSize + 2) + 8);
  }
  const double bar_space = kWidth - label_width - value_width;
  double largest = 0;
  const auto usable = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
  for (const Bar& b : c.bars) {
    largest = std::max(largest, usable(b.value));
    if (b.range) largest = std::max(largest, usable(b.range->hi));
  }
  const auto length = [&](double v) { return largest > 0 ? usable(v) / largest * bar_space : 0; };
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" {} "
      "role=\"img\" aria-label=\"{}\">",
      escape(c.id), kWidth, px(height), kWidth, px(height), kFont, escape(c.title));
  out += fmt::format("<text x=\"0\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>",
                     escape(c.title));
  double y = top;
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double lines = static_cast<double>(labels[i].size());
    const double row = std::max(base_row, lines * (kFontSize + 2) + 8);
    const double mid = y + base_row / 2 - 2;
    double end = label_width + length(b.value);  // where the bar (or its whisker) ends
    out += fmt::format("<g class=\"bar\" data-run=\"{}\" data-value=\"{:g}\">", escape(b.run),
                       b.value);
    out += text_lines(labels[i], label_width - 8, mid, kFontSize, "end");
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#000\" "
        "stroke-width=\"0.8\"/>",
        px(label_width), px(y + 3), px(length(b.value)), px(base_row - 10), b.style.colour);
    if (b.range) {
      const double lo = label_width + length(b.range->lo), hi = label_width + length(b.range->hi);
      const std::string d = fmt::format("M{0} {1}H{2}M{0} {3}V{4}M{2} {3}V{4}", px(lo), px(mid),
                                        px(hi), px(mid - 6), px(mid + 6));
      // A white halo keeps the whisker visible on a dark bar.
      out += fmt::format(
          "<path class=\"range\" d=\"{0}\" stroke=\"#fff\" stroke-width=\"4\" fill=\"none\"/>"
          "<path class=\"range\" d=\"{0}\" stroke=\"#000\" stroke-width=\"1.5\" fill=\"none\"/>",
          d);
      end = std::max(end, hi);
    }
    out += marker_svg(b.style.marker, end + 8, mid, b.style.colour);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" dy=\"0.32em\">{}</text>",
                       px(end + 20), px(mid), escape(b.value_text));
    out += "</g>";
    y += row;
  }
  return out + "</svg>";
}

std::string swatch(const Style& style) {
  return "<svg class=\"swatch\" width=\"32\" height=\"12\" viewBox=\"0 0 32 12\">" +
         sample_svg(style, 1, 6, true) + "</svg>";
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::optional<CodePoint> c = code_point_at(text, i);
    const std::size_t bytes = c ? c->bytes : 1;
    if (!c || !html_character(c->value)) {
      // Shown as its bytes, \xNN each, as the terminal shows them (escaped_text.hpp).
      for (std::size_t k = i; k < i + bytes; ++k) {
        append_byte_escape(out, static_cast<unsigned char>(text[k]));
      }
      i += bytes;
      continue;
    }
    switch (text[i]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.append(text.substr(i, bytes));
    }
    i += bytes;
  }
  return out;
}

}  // namespace mantissa::report::plot
