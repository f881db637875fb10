#include "mantissa/numerics/format.hpp"

#include <string>

#include "mantissa/error.hpp"

namespace mantissa::numerics {

static_assert(kFormatTable[1].max == 65504.0);
static_assert(kFormatTable[2].min_subnormal == detail::pow2(-133));
static_assert(kFormatTable[3].max == (2.0 - detail::pow2(-9)) * detail::pow2(31));
static_assert(kFormatTable[4].max == 448.0);
static_assert(kFormatTable[5].max == 57344.0);

std::optional<Format> parse_format(std::string_view name) {
  for (const auto& t : kFormatTable) {
    if (t.name == name) return t.format;
  }
  return std::nullopt;
}

std::string format_names() {
  std::string out;
  for (const auto& t : kFormatTable) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

std::optional<Format> format_of_safetensors_dtype(std::string_view dtype) {
  for (const auto& t : kFormatTable) {
    if (!t.safetensors_dtype.empty() && t.safetensors_dtype == dtype) return t.format;
  }
  return std::nullopt;
}

Format parse_format_or_throw(std::string_view name, std::string_view what) {
  if (auto f = parse_format(name)) return *f;
  throw Error(std::string(what) + ": unknown format '" + std::string(name) +
              "' (expected one of: " + format_names() + ")");
}

}  // namespace mantissa::numerics
