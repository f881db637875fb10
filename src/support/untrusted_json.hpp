#pragma once
// JSON that came from a file (safetensors headers, checkpoint metadata, metrics records):
// parsed with a bound on its nesting, and described in messages by its kind and size, never
// serialized back (a header nested 100,000 deep once overflowed the stack in dump()).
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/escaped_text.hpp"

namespace mantissa::support {

// No file mantissa reads nests JSON deeper than 4; 64 leaves room and bounds every recursion.
inline constexpr int kMaxJsonDepth = 64;

// A key for a message: control bytes as \xNN, cut to 40 bytes.
inline std::string describe_key(const std::string& key) {
  return escape_controls(std::string_view(key).substr(0, 40)) + (key.size() > 40 ? "..." : "");
}

// The parsed value of `text`; `what` starts every message ("<file>: header"). Text nested
// past `max_depth` or not JSON is a mantissa::Error; `allow_invalid` returns a discarded
// value for invalid JSON instead (the depth bound still throws), and puts the parser's
// reason in `*invalid_reason` when given.
inline nlohmann::json parse_untrusted_json(std::string_view text, const std::string& what,
                                           bool allow_invalid = false,
                                           int max_depth = kMaxJsonDepth,
                                           std::string* invalid_reason = nullptr) {
  using json = nlohmann::json;
  // The keys seen in each object being read, innermost last: a key given twice in one object
  // is refused (the parser would keep the last; which value is meant?).
  std::vector<std::set<std::string>> keys;
  const json::parser_callback_t bound = [&](int depth, json::parse_event_t event, json& value) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth) {
      throw Error(what + ": JSON nested more than " + std::to_string(max_depth) +
                  " levels deep (refused: no file of mantissa's nests this deep)");
    }
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() &&
        !keys.back().insert(value.get<std::string>()).second) {
      throw Error(what + ": the key '" + describe_key(value.get<std::string>()) +
                  "' is given twice in one object (which value is meant?)");
    }
    return true;
  };
  try {
    return json::parse(text, bound, /*allow_exceptions=*/true);
  } catch (const json::exception& e) {
    if (allow_invalid) {
      if (invalid_reason != nullptr) *invalid_reason = e.what();
      return json(json::value_t::discarded);
    }
    throw Error(what + " is not valid JSON (" + e.what() + ")");
  }
}

// The first line of the file at `path`, parsed as above: null when that line is empty (or the
// file is), a discarded value when the file cannot be read, the line is longer than
// `max_bytes` or is not JSON. For telling whose a file is before appending to it.
inline nlohmann::json first_line_json(const std::string& path,
                                      std::size_t max_bytes = std::size_t{1} << 20) {
  using json = nlohmann::json;
  std::ifstream in(path, std::ios::binary);
  if (!in) return json(json::value_t::discarded);
  std::string line;
  char c = 0;
  while (line.size() <= max_bytes && in.get(c) && c != '\n') line.push_back(c);
  if (!in && !in.eof()) return json(json::value_t::discarded);
  if (line.empty()) return json();
  if (line.size() > max_bytes) return json(json::value_t::discarded);
  return parse_untrusted_json(line, path + ": line 1", /*allow_invalid=*/true);
}

// A short description of an untrusted value for messages: scalars as themselves (strings cut
// to 40 bytes), a short flat list by its elements ("[1,2]"), anything else by kind and size
// ("a list of 3 values", "an object of 2 keys"): never a walk into nested structure.
inline std::string describe_json(const nlohmann::json& v) {
  constexpr std::size_t kShownElements = 8;
  if (v.is_array()) {
    bool flat = v.size() <= kShownElements;
    for (std::size_t i = 0; flat && i < v.size(); ++i) flat = v[i].is_primitive();
    if (!flat) return "a list of " + std::to_string(v.size()) + " values";
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out.push_back(',');
      out.append(describe_json(v[i]));
    }
    out.push_back(']');
    return out;
  }
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return nlohmann::json(s.size() > 40 ? s.substr(0, 40) + "..." : s)
        .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  }
  return v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace mantissa::support
