#pragma once
// Whether bytes are well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF, no sequence cut short): what JSON text, and so a safetensors header and the
// config a checkpoint stores in it, must be.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mantissa {

inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
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
      return false;  // a continuation byte first, an overlong lead (0xc0, 0xc1) or past 0xf4
    }
    if (i + static_cast<std::size_t>(more) >= s.size()) return false;  // cut short
    for (int j = 1; j <= more; ++j) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(j)]);
      if ((c & 0xc0u) != 0x80u) return false;
      cp = (cp << 6) | (c & 0x3fu);
    }
    if ((more == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (more == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;  // overlong, a surrogate, or past U+10FFFF
    }
    i += static_cast<std::size_t>(more) + 1;
  }
  return true;
}

}  // namespace mantissa
