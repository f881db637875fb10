#include "layer_patterns.hpp"

#include <algorithm>

#include "mantissa/error.hpp"

namespace mantissa::amp::detail {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Greedy with one backtrack point: the last '*' and where it started matching.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(std::string_view pattern, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return glob_match(pattern, n); });
}

void require_match(const std::string& pattern, const std::vector<std::string>& names,
                   const std::string& key) {
  if (matches_any(pattern, names)) return;
  constexpr std::size_t kShown = 8;
  std::string list;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    list += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kShown) list += " and " + std::to_string(names.size() - kShown) + " more";
  throw Error(key + ": '" + pattern + "' matches no parameter (the model's parameters: " + list +
              ")");
}

}  // namespace mantissa::amp::detail
