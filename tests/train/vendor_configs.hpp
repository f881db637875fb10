#pragma once
// The configs of tests/train/compat/ (one YAML document each), in the vendor's spelling.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "mantissa/config/config.hpp"

namespace mantissa::train {

using config::parse_config;
using config::ScheduledKey;
using config::TrainerConfig;

inline std::string compat_path(const std::string& file) {
  return std::string(MANTISSA_SOURCE_DIR) + "/tests/train/compat/" + file;
}

// Each document of a compat file, as YAML text.
inline std::vector<std::string> compat_documents(const std::string& file) {
  std::vector<std::string> out;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(compat_path(file))) {
    YAML::Emitter e;
    e << doc;
    out.emplace_back(e.c_str());
  }
  return out;
}

// Document `index` of a compat file, parsed (with `overrides` as --set).
inline TrainerConfig compat_config(const std::string& file, std::size_t index,
                                   const std::vector<std::string>& overrides = {}) {
  return parse_config(compat_documents(file).at(index), overrides,
                      file + "#" + std::to_string(index));
}

}  // namespace mantissa::train
