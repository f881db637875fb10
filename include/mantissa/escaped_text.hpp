#pragma once
// Text from a file or a name quoted in a message or on the terminal: control bytes (a
// newline, a NUL, an escape sequence's ESC, DEL) as visible \xNN, so a hostile name can
// neither forge a line, cut the message short, nor recolour or retitle the terminal.
#include <string>
#include <string_view>

namespace mantissa {

// Which control bytes stay as they are (every other one becomes \xNN).
enum class KeptControls : unsigned char { none, tabs, tabs_and_newlines };

// Appends byte `u` as the four characters \xNN (lower-case hex).
inline void append_byte_escape(std::string& out, unsigned char u) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out.push_back(kHex[u >> 4]);
  out.push_back(kHex[u & 0xf]);
}

inline std::string escape_controls(std::string_view text, KeptControls kept = KeptControls::none) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = (c == '\t' && kept != KeptControls::none) ||
                      (c == '\n' && kept == KeptControls::tabs_and_newlines);
    if ((u < 0x20 || u == 0x7f) && !keep) {
      append_byte_escape(out, u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace mantissa
