#pragma once
// Internal: a heat map as inline SVG (rows x columns of coloured cells, a colour bar), for the
// report's "which layer loses what" section. Pure string building, like svg_plot.hpp. Each
// row is a <g class="heat-row" data-row=...> and each cell a <rect class="cell"
// data-column=... data-value=...> with a <title> (the exact figure on hover), so a test or a
// reader of the DOM can tell what the map holds.
#include <optional>
#include <string>
#include <vector>

#include "svg_plot.hpp"

namespace mantissa::report::plot {

struct HeatMap {
  std::string id, title;
  std::string value_label;           // the colour bar's: "SNR (dB)"
  std::string column_label;          // under the columns: "step"
  std::vector<std::string> rows;     // top to bottom
  std::vector<std::string> columns;  // left to right ("1", "20", ...)
  // values[row][column]; nullopt: not measured there (drawn hatched). A value the scale cannot
  // place (+inf on any scale, 0 or less on a log scale) is `special`: drawn white, named in
  // the legend by special_label ("exact", "none").
  std::vector<std::vector<std::optional<double>>> values;
  Scale scale = Scale::linear;  // linear or log10
  // The values the colours span (widened to a nice range); unset: the map's own values. Maps
  // meant to be compared (one per run) share one.
  std::optional<Range> range;
  bool high_is_bad = false;  // the colour runs from good (light) to bad (dark)
  std::string special_label;
  std::string unit;  // appended to values in the cells' titles: " dB", ""
};

// <svg id=...> kWidth wide, as tall as the rows need.
std::string render(const HeatMap& map);

// The colour of t in [0, 1] on the map's palette (viridis, light at 0, dark at 1): "#rrggbb".
std::string heat_colour(double t);

}  // namespace mantissa::report::plot
