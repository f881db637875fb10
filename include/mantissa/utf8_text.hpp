#pragma once
// UTF-8 text: whether bytes are well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF, no sequence cut short), what JSON text, and so a safetensors header
// and the config a checkpoint stores in it, must be; and a note naming the first character of
// a word that is not ASCII, for messages about words that look right and are not.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace mantissa {

struct CodePoint {
  std::uint32_t value;
  std::size_t bytes;  // its length in the text
};

// The code point starting at s[i]; nullopt where the bytes there are not well-formed UTF-8.
inline std::optional<CodePoint> code_point_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return CodePoint{b, 1};
  int more = 0;
  std::uint32_t cp = 0;
  if (b >= 0xc2 && b <= 0xdf) {
    more = 1;
    cp = b & 0x1fu;
  } else if (b >= 0xe0 && b <= 0xef) {
    more = 2;
    cp = b & 0x0fu;
  } else if (b >= 0xf0 && b <= 0xf4) {
    more = 3;
    cp = b & 0x07u;
  } else {
    return std::nullopt;  // a continuation byte first, an overlong lead (0xc0, 0xc1) or past 0xf4
  }
  if (i + static_cast<std::size_t>(more) >= s.size()) return std::nullopt;  // cut short
  for (int j = 1; j <= more; ++j) {
    const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(j)]);
    if ((c & 0xc0u) != 0x80u) return std::nullopt;
    cp = (cp << 6) | (c & 0x3fu);
  }
  if ((more == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (more == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
    return std::nullopt;  // overlong, a surrogate, or past U+10FFFF
  }
  return CodePoint{cp, static_cast<std::size_t>(more) + 1};
}

inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::optional<CodePoint> c = code_point_at(s, i);
    if (!c) return false;
    i += c->bytes;
  }
  return true;
}

// "" for ASCII text; else where its first other character is: " (its character 10 is
// U+200B, not ASCII)", so that a zero-width space or a Cyrillic 'а' in a key that looks
// right is seen. Bytes that are not UTF-8 are named as bytes.
inline std::string non_ascii_note(std::string_view s) {
  std::size_t character = 1;
  for (std::size_t i = 0; i < s.size(); ++character) {
    const std::optional<CodePoint> c = code_point_at(s, i);
    char text[64];
    if (!c) {
      std::snprintf(text, sizeof text, " (its byte %zu is 0x%02x, not UTF-8)", i + 1,
                    static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      return text;
    }
    if (c->value >= 0x80) {
      std::snprintf(text, sizeof text, " (its character %zu is U+%04X, not ASCII)", character,
                    static_cast<unsigned>(c->value));
      return text;
    }
    i += c->bytes;
  }
  return "";
}

}  // namespace mantissa
