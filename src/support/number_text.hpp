#pragma once
// Internal: numbers written for people (run settings, the report's tables and axes).
#include <algorithm>
#include <cmath>
#include <cstdlib>
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

// A number with the fewest significant digits that read back as the same double, written as
// printf's %g writes it at that precision, integers below 10^6 in full ("0.1", "-1e-09",
// "100", "32768", "2147483648", "1e+09", "0.30000000000000004", "inf"): what a message shows
// of a value, never rounded to another (%g's six digits made 2^-14 "6.10352e-05", and
// std::to_string made -1e-9 "-0.000000").
inline std::string value_text(double v) {
  if (!std::isfinite(v) || v == 0) return fmt::format("{}", v);
  const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  for (int digits = 1; digits <= 17; ++digits) {
    const int precision = std::max(digits, std::min(exponent + 1, 6));
    const std::string text = fmt::format("{:.{}g}", v, precision);
    if (digits == 17 || std::strtod(text.c_str(), nullptr) == v) return text;
  }
  return "";  // not reached: 17 significant digits read back as any double
}

// "2^15" for a power of two (but "1"), else value_text(v).
inline std::string scale_text(double v) {
  if (v == 1) return "1";
  if (const std::optional<int> k = power_of_two_exponent(v)) return fmt::format("2^{}", *k);
  return value_text(v);
}

// 1234567 -> "1,234,567" (and the most negative long long too: its magnitude is unsigned)
inline std::string grouped(long long v) {
  const unsigned long long magnitude =
      v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  const std::string digits = std::to_string(magnitude);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace mantissa::support
