#include "svg_heatmap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace mantissa::report::plot {
namespace {

constexpr double kTitleY = 20, kCellsTop = 34, kLegendWidth = 70;
constexpr const char* kFont = "font-family=\"sans-serif\"";
constexpr const char* kSpecialFill = "#ffffff";

std::string px(double v) {
  return fmt::format("{:.1f}", v);
}

// viridis at eleven evenly spaced points, from its light end to its dark end: monotone in
// lightness, so the map reads in greyscale too.
constexpr std::array<std::array<int, 3>, 11> kPalette = {{{253, 231, 37},
                                                          {181, 222, 43},
                                                          {110, 206, 88},
                                                          {53, 183, 121},
                                                          {31, 158, 137},
                                                          {38, 130, 142},
                                                          {49, 104, 142},
                                                          {62, 73, 137},
                                                          {72, 40, 120},
                                                          {68, 1, 84},
                                                          {40, 0, 55}}};

// Whether a value has a place on the colour scale.
bool placeable(double v, Scale scale) {
  return std::isfinite(v) && (scale == Scale::linear || v > 0);
}

struct ColourScale {
  Range range;
  Scale scale;
  bool high_is_bad;
  double position(double v) const {  // 0 at range.lo, 1 at range.hi, clamped
    const auto t = [&](double x) { return scale == Scale::linear ? x : std::log10(x); };
    const double span = t(range.hi) - t(range.lo);
    return span > 0 ? std::clamp((t(v) - t(range.lo)) / span, 0.0, 1.0) : 0.5;
  }
  std::string colour(double v) const {
    const double p = position(v);
    return heat_colour(high_is_bad ? p : 1.0 - p);
  }
};

ColourScale colour_scale(const HeatMap& m) {
  if (m.range) return {nice_range(m.range->lo, m.range->hi, m.scale), m.scale, m.high_is_bad};
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : m.values) {
    for (const std::optional<double>& v : row) {
      if (v && placeable(*v, m.scale)) {
        lo = std::min(lo, *v);
        hi = std::max(hi, *v);
      }
    }
  }
  if (lo > hi) {  // nothing placeable: a default range
    lo = m.scale == Scale::linear ? 0 : 1e-6;
    hi = m.scale == Scale::linear ? 1 : 1;
  }
  return {nice_range(lo, hi, m.scale), m.scale, m.high_is_bad};
}

std::string value_text(double v, const HeatMap& m) {
  if (!placeable(v, m.scale)) return m.special_label;
  return (m.scale == Scale::linear ? fmt::format("{:.2f}", v) : fmt::format("{:.3g}", v)) + m.unit;
}

// The colour bar on the right: the palette from range.lo (bottom) to range.hi (top), ticks,
// then a white swatch for special values and a hatched one for "not measured".
std::string colour_bar(const HeatMap& m, const ColourScale& cs, double x, double top, double height,
                       const std::string& hatch) {
  constexpr int kSteps = 24;
  std::string out = "<g class=\"colour-bar\" font-size=\"10\" fill=\"#222\">";
  const double bar_h = std::max(60.0, std::min(height, 220.0));
  for (int i = 0; i < kSteps; ++i) {
    const double p = (i + 0.5) / kSteps;  // from the bottom
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"{}\" fill=\"{}\"/>", px(x),
                       px(top + bar_h * (1.0 - static_cast<double>(i + 1) / kSteps)),
                       px(bar_h / kSteps + 0.4), heat_colour(cs.high_is_bad ? p : 1.0 - p));
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"{}\" fill=\"none\" "
      "stroke=\"#777\"/>",
      px(x), px(top), px(bar_h));
  for (const double t : ticks(cs.range, cs.scale)) {
    const double y = top + bar_h * (1.0 - cs.position(t));
    out += fmt::format("<path d=\"M{} {}h4\" stroke=\"#222\"/>", px(x + 12), px(y));
    out += fmt::format("<text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}</text>", px(x + 18), px(y),
                       tick_label(t, cs.scale, cs.range));
  }
  double y = top + bar_h + 10;
  if (!m.special_label.empty()) {
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\" stroke=\"#777\"/>"
        "<text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}</text>",
        px(x), px(y), kSpecialFill, px(x + 16), px(y + 5), escape(m.special_label));
    y += 16;
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"url(#{})\" stroke=\"#777\"/>"
      "<text x=\"{}\" y=\"{}\" dy=\"0.32em\">n/a</text>",
      px(x), px(y), hatch, px(x + 16), px(y + 5));
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" "
      "transform=\"rotate(90 {} {})\">{}</text>",
      px(x + 58), px(top + bar_h / 2), px(x + 58), px(top + bar_h / 2), escape(m.value_label));
  return out + "</g>";
}

}  // namespace

std::string heat_colour(double t) {
  const double at = std::clamp(t, 0.0, 1.0) * (kPalette.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(at), kPalette.size() - 2);
  const double f = at - static_cast<double>(i);
  std::array<int, 3> c{};
  for (int k = 0; k < 3; ++k) {
    c[k] = static_cast<int>(std::lround(kPalette[i][k] * (1 - f) + kPalette[i + 1][k] * f));
  }
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

std::string render(const HeatMap& m) {
  std::size_t longest = 0;
  for (const std::string& r : m.rows) longest = std::max(longest, r.size());
  const double label_w = std::clamp(8.0 + 5.6 * static_cast<double>(longest), 60.0, 260.0);
  const double plot_w = kWidth - label_w - kLegendWidth - 8;
  const double cols = static_cast<double>(std::max<std::size_t>(m.columns.size(), 1));
  const double cell_w = plot_w / cols;
  const double cell_h = m.rows.size() > 40 ? 9 : 13;
  const double plot_h = cell_h * static_cast<double>(m.rows.size());
  const double legend_h = std::max(60.0, std::min(plot_h, 220.0)) + 40;
  const double height = kCellsTop + std::max(plot_h + 40, legend_h) + 8;
  const ColourScale cs = colour_scale(m);
  const std::string hatch = m.id + "-hatch";
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"chart heatmap\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "{} role=\"img\" aria-label=\"{}\">",
      escape(m.id), kWidth, px(height), kWidth, px(height), kFont, escape(m.title));
  out += fmt::format(
      "<defs><pattern id=\"{}\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\">"
      "<rect width=\"4\" height=\"4\" fill=\"#f2f2f2\"/><path d=\"M0 4L4 0\" stroke=\"#bbb\" "
      "stroke-width=\"1\"/></pattern></defs>",
      escape(hatch));
  out += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>",
                     px(kTitleY), escape(m.title));
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    const double y = kCellsTop + cell_h * static_cast<double>(r);
    out += fmt::format("<g class=\"heat-row\" data-row=\"{}\">", escape(m.rows[r]));
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"end\" dy=\"0.32em\">{}</text>",
        px(label_w - 6), px(y + cell_h / 2), cell_h > 10 ? 10 : 8, escape(m.rows[r]));
    for (std::size_t c = 0; c < m.columns.size(); ++c) {
      const std::optional<double> v =
          c < m.values[r].size() ? m.values[r][c] : std::optional<double>();
      const std::string fill = !v                       ? "url(#" + escape(hatch) + ")"
                               : placeable(*v, m.scale) ? cs.colour(*v)
                                                        : std::string(kSpecialFill);
      const std::string text = v ? value_text(*v, m) : "not measured";
      out += fmt::format(
          "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "data-column=\"{}\" data-value=\"{}\"><title>{}, {} {}: {}</title></rect>",
          px(label_w + cell_w * static_cast<double>(c)), px(y), px(cell_w + 0.3), px(cell_h + 0.3),
          fill, escape(m.columns[c]), v ? fmt::format("{:g}", *v) : std::string("none"),
          escape(m.rows[r]), escape(m.column_label), escape(m.columns[c]), escape(text));
    }
    out += "</g>";
  }
  // The frame, then the columns' labels: as many as fit without overlapping.
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#777\"/>",
      px(label_w), px(kCellsTop), px(plot_w), px(plot_h));
  const std::size_t every =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(32.0 / cell_w)));
  out += "<g class=\"axes\" font-size=\"10\" fill=\"#222\">";
  for (std::size_t c = 0; c < m.columns.size(); c += every) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                       px(label_w + cell_w * (static_cast<double>(c) + 0.5)),
                       px(kCellsTop + plot_h + 13), escape(m.columns[c]));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
                     px(label_w + plot_w / 2), px(kCellsTop + plot_h + 30), escape(m.column_label));
  out += "</g>";
  out += colour_bar(m, cs, kWidth - kLegendWidth, kCellsTop, plot_h, hatch);
  return out + "</svg>";
}

}  // namespace mantissa::report::plot
