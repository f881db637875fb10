#pragma once
// Internal: numbers written for people (run settings, the report's tables and axes).
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace mantissa::support {

// k when v is exactly 2^k (a loss scale, a format's range), else nullopt.
inline std::optional<int> power_of_two_exponent(double v) {
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  if (m != 0.5) return std::nullopt;
  return e - 1;
}

// "2^15" for a power of two, else the shortest decimal ("0.1", "1e+20").
inline std::string scale_text(double v) {
  if (const std::optional<int> k = power_of_two_exponent(v)) return fmt::format("2^{}", *k);
  return fmt::format("{:g}", v);
}

// 1234567 -> "1,234,567"
inline std::string grouped(long long v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace mantissa::support
