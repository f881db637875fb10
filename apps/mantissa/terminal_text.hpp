#pragma once
// Text from files and names (checkpoint names, metadata, paths, error messages quoting them)
// made safe for a terminal: control bytes become visible \xNN escapes, so an escape sequence
// inside a file can neither recolour, move nor retitle the user's terminal.
#include <string>
#include <string_view>

#include "mantissa/escaped_text.hpp"

namespace mantissa::app {

enum class Newlines : bool { keep, escape };

// `text` with every control byte (below 0x20 except tab, and DEL) as \xNN; newlines kept
// unless asked otherwise (an error is one line: a newline inside it, from a key or a path,
// would let a file forge a line of its own).
inline std::string terminal_safe(std::string_view text, Newlines newlines = Newlines::keep) {
  return escape_controls(
      text, newlines == Newlines::keep ? KeptControls::tabs_and_newlines : KeptControls::tabs);
}

}  // namespace mantissa::app
