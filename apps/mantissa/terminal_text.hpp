#pragma once
// Text from files and names (checkpoint names, metadata, paths, error messages quoting them)
// made safe for a terminal: control bytes become visible \xNN escapes, so an escape sequence
// inside a file can neither recolour, move nor retitle the user's terminal.
#include <string>
#include <string_view>

namespace mantissa::app {

enum class Newlines : bool { keep, escape };

// `text` with every control byte (below 0x20 except tab, and DEL) as \xNN; newlines kept
// unless asked otherwise (an error is one line: a newline inside it, from a key or a path,
// would let a file forge a line of its own).
inline std::string terminal_safe(std::string_view text, Newlines newlines = Newlines::keep) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool kept = c == '\t' || (c == '\n' && newlines == Newlines::keep);
    if ((u < 0x20 && !kept) || u == 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace mantissa::app
