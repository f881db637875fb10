#pragma once
// Integer options written in decimal: digits, after a '-' for a signed one, and nothing else.
// CLI11's own conversion would take "0x10" as 16 and " 5" as 5; a typo there should fail,
// not run something else. Each option's own range check runs after this one.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace mantissa::app {

// A CLI11 check that the text is a whole decimal integer of type T, in [low, high].
template <class T>
CLI::Validator decimal(T low = std::numeric_limits<T>::min(),
                       T high = std::numeric_limits<T>::max()) {
  return CLI::Validator(
      [low, high](std::string& text) {
        T v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc() && stop == end && v >= low && v <= high) return std::string();
        if (std::is_signed_v<T> && low == std::numeric_limits<T>::min() &&
            high == std::numeric_limits<T>::max()) {
          return "'" + text + "' is not a decimal integer";
        }
        return "'" + text + "' is not an integer in [" + std::to_string(low) + ", " +
               std::to_string(high) + "]";
      },
      "INT");
}

}  // namespace mantissa::app
