#pragma once
// Internal: a chart's series of more points than its plot area has pixel columns, thinned to
// what those columns show (svg_plot.cpp draws the thinned series). A run logged at every one
// of millions of steps otherwise put every point into the page (10 million windows: some
// 350 MB of HTML, more than a browser opens).
#include <cstddef>

#include "svg_plot.hpp"

namespace mantissa::report::plot {

// Series of more points than this are thinned: four for each pixel column of a plot area.
inline constexpr std::size_t kThinningFrom = 2048;

// `s` itself when it has at most kThinningFrom points. Else, of each run of consecutive
// drawable points that fall in one pixel column of `mx`: the first, the lowest, the highest
// and the last (in their order), which draw the same line, staircase or markers as all of
// them; for a band or ranges, one point at the first one's x from the lowest lower to the
// highest upper value. Of each run of points that are not drawable, one (where the line
// breaks).
Series thinned(const Series& s, const AxisMap& mx, const AxisMap& my);

}  // namespace mantissa::report::plot
