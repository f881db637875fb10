#include "series_thinning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mantissa::report::plot {

Series thinned(const Series& s, const AxisMap& mx, const AxisMap& my) {
  if (s.points.size() <= kThinningFrom) return s;
  const bool spans = s.draw == Draw::band || s.draw == Draw::ranges;
  const auto upper = [&](std::size_t k) {
    return k < s.upper.size() ? s.upper[k] : std::numeric_limits<double>::quiet_NaN();
  };
  const auto y = [&](std::size_t k) { return s.points[k].second; };
  const auto top = [&](std::size_t k) { return spans ? upper(k) : y(k); };
  const auto drawable = [&](std::size_t k) {
    return mx.drawable(s.points[k].first) && my.drawable(y(k)) && (!spans || my.drawable(upper(k)));
  };
  Series out = s;
  out.points.clear();
  out.upper.clear();
  const auto keep = [&](std::size_t k) {
    out.points.push_back(s.points[k]);
    if (spans) out.upper.push_back(upper(k));
  };
  const std::size_t n = s.points.size();
  for (std::size_t i = 0; i < n;) {
    if (!drawable(i)) {
      keep(i);
      while (i < n && !drawable(i)) ++i;
      continue;
    }
    const double column = std::floor(mx(s.points[i].first));
    std::size_t end = i, low = i, high = i;
    for (; end < n && drawable(end) && std::floor(mx(s.points[end].first)) == column; ++end) {
      if (y(end) < y(low)) low = end;
      if (top(end) > top(high)) high = end;
    }
    if (spans) {
      out.points.push_back({s.points[i].first, y(low)});
      out.upper.push_back(top(high));
    } else {
      std::vector<std::size_t> kept{i, low, high, end - 1};
      std::sort(kept.begin(), kept.end());
      kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
      for (const std::size_t k : kept) keep(k);
    }
    i = end;
  }
  return out;
}

}  // namespace mantissa::report::plot
