#pragma once
// Internal: reading and writing the fields of a metrics.jsonl record (metrics.cpp and the
// records of their own files): errors that name the file, the line and the key, and field
// lists (a key and a member) that one code reads and writes.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"

namespace mantissa::report::detail {

using json = nlohmann::json;

inline const char* type_word(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

// The fields of one record, read with errors that name the file, the line and the key.
class Fields {
 public:
  Fields(const json& object, std::string where, const char* kind)
      : j_(object), where_(std::move(where)), kind_(kind) {}

  const json& required(const std::string& key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail("the " + std::string(kind_) + " record has no '" + key + "' field");
    return *it;
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  // A number; null (how non-finite values are written) reads as NaN.
  double number(const std::string& key) const {
    const json& v = required(key);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) mistyped(key, v, "a number");
    return v.get<double>();
  }
  std::optional<double> optional_number(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return number(key);
  }
  // Every integer of a record counts something (steps, items, parameters): >= 0, and within
  // int64 (a larger one would wrap).
  std::int64_t integer(const std::string& key) const {
    const json& v = required(key);
    constexpr const char* kExpected = "an integer from 0 to 2^63 - 1";
    if (v.is_number_integer() && !v.is_number_unsigned()) {  // negative: said as it is
      fail("'" + key + "' is " + std::to_string(v.get<std::int64_t>()) + ", expected " + kExpected);
    }
    if (!v.is_number_unsigned() ||
        v.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      mistyped(key, v, kExpected);
    }
    return v.get<std::int64_t>();
  }
  std::uint64_t unsigned_integer(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_number_unsigned()) mistyped(key, v, "an integer >= 0");
    return v.get<std::uint64_t>();
  }
  std::optional<std::int64_t> optional_integer(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return integer(key);
  }
  // A name of `table`: a word in it, else an error listing the words.
  template <class Enum, std::size_t N>
  Enum named(const std::string& key, const NameTable<Enum, N>& table) const {
    const std::string word = text(key);
    const std::optional<Enum> v = find_named(table, word);
    if (!v) fail("'" + key + "' is '" + word + "' (expected one of: " + names_of(table) + ")");
    return *v;
  }
  // A tensor format's name.
  numerics::Format format(const std::string& key) const {
    const std::string word = text(key);
    const std::optional<numerics::Format> parsed = numerics::parse_format(word);
    if (!parsed) fail("'" + key + "' is '" + word + "', not a number format");
    if (!numerics::is_tensor_format(*parsed))
      fail("'" + key + "' is '" + word + "', not a tensor format");
    return *parsed;
  }
  std::string text(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_string()) mistyped(key, v, "a string");
    return v.get<std::string>();
  }
  std::vector<std::string> texts(const std::string& key) const {
    const json& v = required(key);
    bool ok = v.is_array();
    for (const json& e : v) ok = ok && e.is_string();
    if (!ok) mistyped(key, v, "a list of strings");
    return v.get<std::vector<std::string>>();
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(where_ + ": " + what); }

 private:
  [[noreturn]] void mistyped(const std::string& key, const json& v, const char* expected) const {
    fail("'" + key + "' is " + type_word(v) + ", expected " + expected);
  }
  const json& j_;
  std::string where_;
  const char* kind_;
};

// One field list per record kind, read and written by the same code: a key and a member.
template <class R, class T>
struct Field {
  const char* key;
  T R::*member;
};

inline void read_value(const Fields& f, const char* key, std::int64_t& v) {
  v = f.integer(key);
}
inline void read_value(const Fields& f, const char* key, std::uint64_t& v) {
  v = f.unsigned_integer(key);
}
inline void read_value(const Fields& f, const char* key, std::optional<std::int64_t>& v) {
  v = f.optional_integer(key);
}
inline void read_value(const Fields& f, const char* key, double& v) {
  v = f.number(key);
}
inline void read_value(const Fields& f, const char* key, std::optional<double>& v) {
  v = f.optional_number(key);
}
inline void read_value(const Fields& f, const char* key, std::string& v) {
  v = f.text(key);
}
inline void read_value(const Fields& f, const char* key, std::vector<std::string>& v) {
  v = f.texts(key);
}

template <class T>
void write_value(json& j, const char* key, const T& v) {
  j[key] = v;  // a non-finite double is written as null
}
template <class T>
void write_value(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class R, class Table>
R read_fields(const Fields& f, const Table& table) {
  R r;
  std::apply([&](const auto&... field) { (read_value(f, field.key, r.*field.member), ...); },
             table);
  return r;
}

template <class R, class Table>
json write_fields(const R& r, const Table& table) {
  json j = json::object();
  std::apply([&](const auto&... field) { (write_value(j, field.key, r.*field.member), ...); },
             table);
  return j;
}

}  // namespace mantissa::report::detail
