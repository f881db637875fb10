#pragma once
// Internal: parameter-name patterns of per-layer precision overrides ('*' any run of
// characters, dots included; '?' one character; everything else itself).
#include <string>
#include <string_view>
#include <vector>

namespace mantissa::amp::detail {

bool glob_match(std::string_view pattern, std::string_view name);
bool matches_any(std::string_view pattern, const std::vector<std::string>& names);
// Throws mantissa::Error "<key>: '<pattern>' matches no parameter (the model's parameters:
// a, b, ... and N more)" when no name matches.
void require_match(const std::string& pattern, const std::vector<std::string>& names,
                   const std::string& key);

}  // namespace mantissa::amp::detail
