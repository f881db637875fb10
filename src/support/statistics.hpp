#pragma once
// Internal: small statistics over measured values.
#include <algorithm>
#include <limits>
#include <vector>

namespace mantissa::support {

// The median (the mean of the middle two for an even count); NaN for no values.
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace mantissa::support
