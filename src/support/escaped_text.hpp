#pragma once
// Text from a file quoted in a message: control bytes (a newline, a NUL, an escape sequence's
// ESC) as visible \xNN, so a hostile name can neither forge a line nor cut the message short.
#include <string>
#include <string_view>

namespace mantissa::support {

inline std::string escape_controls(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace mantissa::support
