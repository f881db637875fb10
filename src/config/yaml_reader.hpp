#pragma once
// Internal: strict reading of a YAML mapping. Every key read is recorded; finish() rejects
// the rest, naming the key path and the keys allowed there.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/names.hpp"
#include "mantissa/optim/optimizer_settings.hpp"
#include "mantissa/utf8_text.hpp"

namespace mantissa::config::detail {

class Reader {
 public:
  Reader(YAML::Node node, std::string path) : node_(std::move(node)), path_(std::move(path)) {
    if (node_ && !node_.IsNull() && !node_.IsMap()) {
      throw Error(path_ + ": expected a mapping of keys to values");
    }
  }
  const std::string& path() const { return path_; }
  std::string key_path(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool has(const std::string& key) {
    allowed_.insert(key);
    return node_ && node_.IsMap() && node_[key] && !node_[key].IsNull();
  }
  YAML::Node raw(const std::string& key) {
    allowed_.insert(key);
    return node_ && node_.IsMap() ? node_[key] : YAML::Node();
  }
  Reader child(const std::string& key) { return Reader(raw(key), key_path(key)); }

  template <class T>
  T get(const std::string& key, const T& fallback, const char* type_name) {
    if (!has(key)) return fallback;
    return as<T>(node_[key], key_path(key), type_name);
  }
  // An integer >= min (fallback when absent); "<key path>: <v> must be >= <min>" otherwise.
  std::int64_t get_at_least(const std::string& key, std::int64_t fallback, std::int64_t min) {
    const auto v = get<std::int64_t>(key, fallback, "an integer");
    if (v < min) {
      throw Error(key_path(key) + ": " + std::to_string(v) + " must be >= " + std::to_string(min));
    }
    return v;
  }
  // A number in `allowed` (fallback when absent): "<key path>: <v> must be <range>" otherwise.
  double get_number(const std::string& key, double fallback, const optim::Range& allowed) {
    return in_range(key, get<double>(key, fallback, "a number"), allowed);
  }
  double require_number(const std::string& key, const optim::Range& allowed) {
    return in_range(key, require<double>(key, "a number"), allowed);
  }
  double in_range(const std::string& key, double v, const optim::Range& allowed) const {
    if (!allowed.contains(v)) {
      std::ostringstream text;
      text << v;
      throw Error(key_path(key) + ": " + text.str() + " must be " + allowed.describe());
    }
    return v;
  }
  template <class T>
  T require(const std::string& key, const char* type_name) {
    if (!has(key)) throw Error(key_path(key) + ": missing (expected " + type_name + ")");
    return as<T>(node_[key], key_path(key), type_name);
  }
  // A word from `table` at `key`, as its enum value; one message for every such key:
  // "<key path>: '<word>' (expected one of: a, b, c)".
  template <class E, std::size_t N>
  E require_named(const std::string& key, const NameTable<E, N>& table) {
    const std::string expected = "a string (one of: " + names_of(table) + ")";
    return parse_named(table, require<std::string>(key, expected.c_str()), key_path(key));
  }
  template <class E, std::size_t N>
  E get_named(const std::string& key, E fallback, const NameTable<E, N>& table) {
    return has(key) ? require_named(key, table) : fallback;
  }
  // The scalar at `n` as T. Numbers must be finite: no setting takes inf or NaN. A quoted
  // scalar is a string, never a number or a boolean ("1" and "false" are refused as YAML's
  // own rules have them), and no setting takes an empty string.
  template <class T>
  static T as(const YAML::Node& n, const std::string& where, const char* type_name) {
    if (!n.IsScalar()) throw Error(where + ": expected " + type_name + ", got a " + kind(n));
    if constexpr (std::is_same_v<T, std::string>) {
      if (n.Scalar().empty())
        throw Error(where + ": an empty string (expected " + type_name +
                    "; leave the key out for the default)");
    } else if (n.Tag() == "!") {
      throw Error(where + ": '" + n.Scalar() + "' is quoted, so a string (expected " + type_name +
                  ": write it without quotes)");
    }
    if constexpr (std::is_same_v<T, bool>) {
      // YAML 1.2's booleans only: yaml-cpp also takes YAML 1.1's y, yes, on, off, ...
      static constexpr const char* kWords[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
      if (std::none_of(std::begin(kWords), std::end(kWords),
                       [&](const char* w) { return n.Scalar() == w; })) {
        throw Error(where + ": '" + n.Scalar() + "' is not " + type_name);
      }
    }
    T v{};
    try {
      v = n.as<T>();
    } catch (const YAML::Exception&) {
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        // A number written right but out of the type's range is said so, not "not a number".
        const std::string& text = n.Scalar();
        const char* first = text.data() + (text.starts_with('+') ? 1 : 0);
        T parsed{};
        const auto [stop, ec] = std::from_chars(first, text.data() + text.size(), parsed);
        if (ec == std::errc::result_out_of_range && stop == text.data() + text.size()) {
          std::string bound = "magnitudes up to about 1.8e308";
          if constexpr (std::is_integral_v<T>) {
            bound = std::to_string(std::numeric_limits<T>::min()) + ".." +
                    std::to_string(std::numeric_limits<T>::max());
          }
          throw Error(where + ": '" + text + "' is past the range of " + type_name + " (" + bound +
                      ")");
        }
      }
      throw Error(where + ": '" + n.Scalar() + "' is not " + type_name);
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) throw Error(where + ": '" + n.Scalar() + "' is not a finite number");
      // 1e-999 reads as 0: a setting the user did not write.
      const std::string& text = n.Scalar();
      const std::string digits = text.substr(0, text.find_first_of("eE"));
      if (v == 0 && digits.find_first_of("123456789") != std::string::npos) {
        throw Error(where + ": '" + text + "' is too small for a double (it would read as 0)");
      }
    }
    return v;
  }
  // A mapping key as text: keys are words (a list or mapping used as a key is an error).
  static std::string key_text(const YAML::Node& key, const std::string& where) {
    if (!key.IsScalar())
      throw Error(where + ": a " + kind(key) + " used as a key (keys are words)");
    return key.Scalar();
  }
  static std::string kind(const YAML::Node& n) {
    return n.IsMap() ? "mapping" : (n.IsSequence() ? "list" : (n.IsNull() ? "null" : "value"));
  }
  // Unknown keys are errors.
  void finish() const {
    if (!node_ || !node_.IsMap()) return;
    for (const auto& kv : node_) {
      const std::string k = key_text(kv.first, path_.empty() ? "the top level" : path_);
      if (allowed_.count(k) == 0) {
        std::string list;
        for (const auto& a : allowed_) list += (list.empty() ? "" : ", ") + a;
        throw Error(key_path(k) + ": unknown key" + non_ascii_note(k) +
                    " (expected one of: " + list + ")");
      }
    }
  }
  // Declares keys that are allowed without reading them.
  void allow(std::initializer_list<const char*> keys) {
    for (const char* k : keys) allowed_.insert(k);
  }

 private:
  YAML::Node node_;
  std::string path_;
  std::set<std::string> allowed_;
};

}  // namespace mantissa::config::detail
