#pragma once
// The number formats mantissa computes in, their bit layouts, and one traits table indexed
// by format (docs/design.md section 2).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mantissa/names.hpp"

namespace mantissa::numerics {

enum class Format : std::uint8_t {
  float32,
  float16,
  bfloat16,
  cbfloat16,
  float8_e4m3,
  float8_e5m2,
};
// The number of formats: the last enumerator + 1 (update it with the enum; every table
// indexed by Format is checked against it at compile time).
inline constexpr std::size_t kFormatCount = static_cast<std::size_t>(Format::float8_e5m2) + 1;

inline constexpr std::array<Format, 6> kAllFormats = {Format::float32,     Format::float16,
                                                      Format::bfloat16,    Format::cbfloat16,
                                                      Format::float8_e4m3, Format::float8_e5m2};
static_assert(in_enum_order(kAllFormats, kFormatCount, [](Format f) { return f; }),
              "kAllFormats must list every Format, in enum order");

// The five formats narrower than float32, the ones the codec encodes to.
inline constexpr std::array<Format, 5> kNarrowFormats = {
    Format::float16, Format::bfloat16, Format::cbfloat16, Format::float8_e4m3, Format::float8_e5m2};
static_assert(kNarrowFormats.size() + 1 == kFormatCount &&
                  in_enum_order(kNarrowFormats, kFormatCount - 1,
                                [](Format f) { return static_cast<std::size_t>(f) - 1; }),
              "kNarrowFormats must list every Format but float32, in enum order");

// How the top exponent field is used.
enum class Specials : std::uint8_t {
  ieee,    // top exponent: mantissa 0 is infinity, anything else NaN
  fn_nan,  // OCP "fn": no infinity; only S.1111.111 (all ones) is NaN, the rest are finite
};

// Sign, exponent and mantissa widths plus bias: enough to decode and encode every pattern.
struct Layout {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Specials specials;

  constexpr int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
  constexpr std::uint32_t exponent_mask() const { return (1u << exponent_bits) - 1u; }
  constexpr std::uint32_t mantissa_mask() const { return (1u << mantissa_bits) - 1u; }
  constexpr std::uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  constexpr std::uint32_t magnitude_mask() const { return sign_bit() - 1u; }
  // Largest finite magnitude pattern.
  constexpr std::uint32_t max_finite_bits() const {
    return specials == Specials::ieee ? (exponent_mask() << mantissa_bits) - 1u
                                      : magnitude_mask() - 1u;
  }
  constexpr bool has_infinity() const { return specials == Specials::ieee; }
  // Infinity magnitude pattern (only meaningful when has_infinity()).
  constexpr std::uint32_t infinity_bits() const { return exponent_mask() << mantissa_bits; }
};

// What happens to a finite value whose rounded magnitude exceeds the format's max.
enum class Overflow : std::uint8_t {
  to_infinity,  // +-inf; NaN in a format without infinity (float8_e4m3)
  saturate,     // +-max
};

struct FormatTraits {
  Format format;
  std::string_view name;
  // The safetensors dtype ("F16", ...); empty when the format has none (cbfloat16, whose
  // tensors safetensors files hold as F32 values).
  std::string_view safetensors_dtype;
  Layout layout;
  int storage_bytes;
  Overflow default_overflow;
  double max;            // largest finite value
  double min_normal;     // smallest positive normal
  double min_subnormal;  // smallest positive subnormal
  double epsilon;        // 2^-mantissa_bits: distance from 1 to the next value
};

namespace detail {
constexpr double pow2(int e) {
  double v = 1.0;
  for (; e > 0; --e) v *= 2.0;
  for (; e < 0; ++e) v /= 2.0;
  return v;
}

constexpr FormatTraits make_traits(Format f, std::string_view name, std::string_view dtype,
                                   Layout l, Overflow overflow) {
  const int e_max_field = l.specials == Specials::ieee ? static_cast<int>(l.exponent_mask()) - 1
                                                       : static_cast<int>(l.exponent_mask());
  // fn formats lose the all-ones mantissa at the top exponent to NaN.
  const double top_mantissa = l.specials == Specials::ieee ? 2.0 - pow2(-l.mantissa_bits)
                                                           : 2.0 - 2.0 * pow2(-l.mantissa_bits);
  const int storage = l.total_bits() <= 8 ? 1 : (l.total_bits() <= 16 ? 2 : 4);
  return FormatTraits{f,
                      name,
                      dtype,
                      l,
                      storage,
                      overflow,
                      top_mantissa * pow2(e_max_field - l.bias),
                      pow2(1 - l.bias),
                      pow2(1 - l.bias - l.mantissa_bits),
                      pow2(-l.mantissa_bits)};
}
}  // namespace detail

// The traits table, indexed by static_cast<int>(Format): the one place a format's name and
// safetensors dtype are written down.
inline constexpr std::array<FormatTraits, 6> kFormatTable = {
    detail::make_traits(Format::float32, "float32", "F32", {8, 23, 127, Specials::ieee},
                        Overflow::to_infinity),
    detail::make_traits(Format::float16, "float16", "F16", {5, 10, 15, Specials::ieee},
                        Overflow::to_infinity),
    detail::make_traits(Format::bfloat16, "bfloat16", "BF16", {8, 7, 127, Specials::ieee},
                        Overflow::to_infinity),
    detail::make_traits(Format::cbfloat16, "cbfloat16", "", {6, 9, 31, Specials::ieee},
                        Overflow::to_infinity),
    detail::make_traits(Format::float8_e4m3, "float8_e4m3", "F8_E4M3", {4, 3, 7, Specials::fn_nan},
                        Overflow::saturate),
    detail::make_traits(Format::float8_e5m2, "float8_e5m2", "F8_E5M2", {5, 2, 15, Specials::ieee},
                        Overflow::to_infinity),
};

static_assert(in_enum_order(kFormatTable, kFormatCount,
                            [](const FormatTraits& t) { return t.format; }),
              "kFormatTable must hold every Format, in enum order");

constexpr const FormatTraits& traits(Format f) {
  return kFormatTable[static_cast<std::size_t>(f)];
}
constexpr const Layout& layout(Format f) {
  return traits(f).layout;
}
constexpr std::string_view name(Format f) {
  return traits(f).name;
}

// Parses a format name ("float16", "bfloat16", ...); nullopt when unknown.
std::optional<Format> parse_format(std::string_view name);
// Parses a format name or throws mantissa::Error naming `what` and the allowed names.
Format parse_format_or_throw(std::string_view name, std::string_view what);
// "float32, float16, bfloat16, cbfloat16, float8_e4m3, float8_e5m2" (the table's names)
std::string format_names();
// The format whose safetensors dtype is `dtype`; nullopt when no format has it.
std::optional<Format> format_of_safetensors_dtype(std::string_view dtype);

}  // namespace mantissa::numerics
