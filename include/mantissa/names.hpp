#pragma once
// Names for enum values: one table per enum gives each value the word configs, messages and
// docs use. Text becomes a value only where it enters the program (the config parser, the
// command line); below that, code decides on the enum, never on the word.
#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "mantissa/error.hpp"
#include "mantissa/utf8_text.hpp"

namespace mantissa {

template <class E>
struct Named {
  std::string_view name;
  E value;
};

template <class E, std::size_t N>
using NameTable = std::array<Named<E>, N>;

// The word for `value` ("?" when the table lacks it, which a unit test rules out per table).
template <class E, std::size_t N>
constexpr std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const Named<E>& n : table) {
    if (n.value == value) return n.name;
  }
  return "?";
}

// "a, b, c": the words of a table, for messages and help texts.
template <class E, std::size_t N>
std::string names_of(const NameTable<E, N>& table) {
  std::string out;
  for (const Named<E>& n : table) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

// Whether a table indexed by an enum holds one entry per value of the enum (`count` of
// them), entry i being the value i. Beside every enum-indexed table:
//   static_assert(in_enum_order(kTable, kCount, [](const Entry& e) { return e.kind; }));
// so a value added to the enum and not to the table (or a table out of order) does not build.
template <class Table, class Key>
constexpr bool in_enum_order(const Table& table, std::size_t count, Key key) {
  if (std::size(table) != count) return false;
  std::size_t i = 0;
  for (const auto& entry : table) {
    if (static_cast<std::size_t>(key(entry)) != i++) return false;
  }
  return true;
}
// A name table whose entries are the enum's values in order (it then doubles as the
// enum-indexed array of its words).
template <class E, std::size_t N>
constexpr bool in_enum_order(const NameTable<E, N>& table, std::size_t count) {
  return in_enum_order(table, count, [](const Named<E>& n) { return n.value; });
}

template <class E, std::size_t N>
constexpr std::optional<E> find_named(const NameTable<E, N>& table, std::string_view word) {
  for (const Named<E>& n : table) {
    if (n.name == word) return n.value;
  }
  return std::nullopt;
}

// The value named `word`, or mantissa::Error "<what>: '<word>' (expected one of: a, b, c)".
template <class E, std::size_t N>
E parse_named(const NameTable<E, N>& table, std::string_view word, std::string_view what) {
  if (const std::optional<E> v = find_named(table, word)) return *v;
  throw Error(std::string(what) + ": '" + std::string(word) + "'" + non_ascii_note(word) +
              " (expected one of: " + names_of(table) + ")");
}

}  // namespace mantissa
