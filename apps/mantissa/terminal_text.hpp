#pragma once
// Text from files and names (checkpoint names, metadata, paths, error messages quoting them)
// made safe for a terminal: control bytes become visible \xNN escapes, so an escape sequence
// inside a file can neither recolour, move nor retitle the user's terminal.
#include <cstddef>
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

// The most of one message a terminal line shows: a message quoting a huge value from a file
// (a format name of a megabyte) is cut, not printed whole.
inline constexpr std::size_t kMessageBytes = 4096;

// An error or log message as one terminal line: terminal_safe with newlines escaped, of at
// most the first kMessageBytes bytes of `text` (cut before a UTF-8 character that would not
// fit), followed by how many bytes were left out.
inline std::string message_line(std::string_view text) {
  if (text.size() <= kMessageBytes) return terminal_safe(text, Newlines::escape);
  std::size_t cut = kMessageBytes;
  // Back to the first byte of a character: never a continuation byte (10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return terminal_safe(text.substr(0, cut), Newlines::escape) + " ... (" +
         std::to_string(text.size() - cut) + " more bytes of this message not shown)";
}

}  // namespace mantissa::app
