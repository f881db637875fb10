#include "mantissa/numerics/format.hpp"

#include <string>

#include "mantissa/error.hpp"

namespace mantissa::numerics {

static_assert(kFormatTable[1].max == 65504.0);
static_assert(kFormatTable[2].min_subnormal == detail::pow2(-133));
static_assert(kFormatTable[3].max == (2.0 - detail::pow2(-9)) * detail::pow2(31));
static_assert(kFormatTable[4].max == 448.0);
static_assert(kFormatTable[5].max == 57344.0);
static_assert(traits(Format::float6_e2m3).max == 7.5);
static_assert(traits(Format::float6_e3m2).max == 28.0);
static_assert(traits(Format::float4_e2m1).max == 6.0);
static_assert(traits(Format::float4_e2m1).min_subnormal == 0.5);
static_assert(traits(Format::float8_e8m0).max == detail::pow2(127));
static_assert(traits(Format::float8_e8m0).layout.total_bits() == 8);
static_assert(static_cast<std::size_t>(Format::float8_e8m0) + 1 == kFormatCount);

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kFormatCount; ++i) {
    if (static_cast<std::size_t>(kFormatTable[i].format) != i) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "kFormatTable rows must follow the Format enum");

namespace detail {
void throw_not_a_format(Format f) {
  throw Error("numerics::Format " + std::to_string(static_cast<int>(f)) +
              " is not a format (expected 0.." + std::to_string(kFormatCount - 1) + ": " +
              format_names() + ")");
}
}  // namespace detail

std::string_view specials_description(const Layout& l) {
  switch (l.specials) {
    case Specials::ieee:
      return "inf, NaN";
    case Specials::fn_nan:
      return "no inf, NaN = S.1111.111";
    case Specials::none:
      return "no inf, no NaN";
    case Specials::e8m0:
      return "unsigned, no zero, NaN = 0xff";
  }
  return "?";
}

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

std::string format_use_note(Format f) {
  switch (traits(f).use) {
    case FormatUse::tensor:
      return "";
    case FormatUse::block_element:
      return std::string(name(f)) +
             " is an element format of block-scaled tensors (numerics/block_scaling.hpp), not a "
             "tensor or compute format";
    case FormatUse::block_scale:
      return std::string(name(f)) +
             " is the power-of-two scale format of MX blocks, not a tensor or compute format";
  }
  return "";
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
