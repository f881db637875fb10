#pragma once
// Internal: the checks a YAML document passes before any key of it is read: no mapping holds a
// key twice (YAML forbids it; yaml-cpp keeps both and reads the first), nothing nests
// deeper than any config needs, and aliases do not expand it past any config's size.
#include <yaml-cpp/yaml.h>

#include <string>

namespace mantissa::config::detail {

// No config nests deeper than 6; the bound keeps every walk over a document short.
inline constexpr int kMaxYamlDepth = 64;
// No config holds more than a few thousand values; aliases could make a 1 KB text 10^9.
inline constexpr long kMaxYamlNodes = 100000;

// YAML::Load of `text`, then the checks; every failure is a mantissa::Error starting with
// `source` (the file, or "--set 'k=v'"), and a repeated key is named by its key path.
YAML::Node load_yaml_document(const std::string& text, const std::string& source);

// The checks alone, on a document already loaded (after --set overrides changed it).
void check_yaml_document(const YAML::Node& root, const std::string& source);

}  // namespace mantissa::config::detail
