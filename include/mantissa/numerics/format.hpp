#pragma once
// The number formats mantissa computes in or quantizes to, their bit layouts, and one traits
// table indexed by format (docs/design.md section 2).
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
  // Element and scale formats of the block-scaled recipes (OCP Microscaling, NVFP4): the
  // codec, the reports and the block quantizers (block_scaling.hpp) know them; a Tensor does
  // not hold them and no policy computes in them (FormatUse).
  float6_e2m3,
  float6_e3m2,
  float4_e2m1,
  float8_e8m0,
};

// The number of formats: the last enumerator + 1 (update it with the enum; every table
// indexed by Format is checked against it at compile time).
inline constexpr std::size_t kFormatCount = static_cast<std::size_t>(Format::float8_e8m0) + 1;

// What a format is for.
enum class FormatUse : std::uint8_t {
  tensor,         // a Tensor dtype: float32, the 16-bit compute formats and fp8
  block_element,  // only inside a block-scaled tensor, with its scales (fp6, fp4)
  block_scale,    // only as a block's power-of-two scale (E8M0)
};

// The formats a Tensor (and so the GEMM, safetensors and the trainer) can hold.
inline constexpr std::array<Format, 6> kTensorFormats = {Format::float32,     Format::float16,
                                                         Format::bfloat16,    Format::cbfloat16,
                                                         Format::float8_e4m3, Format::float8_e5m2};

// Every format narrower than float32: the ones the codec encodes to.
inline constexpr std::array<Format, 9> kNarrowFormats = {
    Format::float16,     Format::bfloat16,    Format::cbfloat16,
    Format::float8_e4m3, Format::float8_e5m2, Format::float6_e2m3,
    Format::float6_e3m2, Format::float4_e2m1, Format::float8_e8m0};
static_assert(kNarrowFormats.size() + 1 == kFormatCount &&
                  in_enum_order(kNarrowFormats, kFormatCount - 1,
                                [](Format f) { return static_cast<std::size_t>(f) - 1; }),
              "kNarrowFormats must list every Format but float32, in enum order");

// The element formats of block-scaled tensors (MX: fp8, fp6, fp4; NVFP4: fp4).
inline constexpr std::array<Format, 5> kBlockElementFormats = {
    Format::float8_e4m3, Format::float8_e5m2, Format::float6_e2m3, Format::float6_e3m2,
    Format::float4_e2m1};

// How the top exponent field (and the sign) are used.
enum class Specials : std::uint8_t {
  ieee,    // top exponent: mantissa 0 is infinity, anything else NaN
  fn_nan,  // OCP "fn": no infinity; only S.1111.111 (all ones) is NaN, the rest are finite
  none,    // OCP fp6/fp4: no infinity, no NaN; every pattern is a finite number
  e8m0,    // OCP E8M0 scale: no sign, no mantissa, no zero; 2^(field - 127), 0xFF is NaN
};

// Sign, exponent and mantissa widths plus bias: enough to decode and encode every pattern.
struct Layout {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Specials specials;

  constexpr bool has_sign() const { return specials != Specials::e8m0; }
  constexpr bool has_nan() const { return specials != Specials::none; }
  constexpr int total_bits() const { return (has_sign() ? 1 : 0) + exponent_bits + mantissa_bits; }
  constexpr std::uint32_t exponent_mask() const { return (1u << exponent_bits) - 1u; }
  constexpr std::uint32_t mantissa_mask() const { return (1u << mantissa_bits) - 1u; }
  // The sign bit (0 for E8M0, which has none).
  constexpr std::uint32_t sign_bit() const {
    return has_sign() ? 1u << (exponent_bits + mantissa_bits) : 0u;
  }
  constexpr std::uint32_t magnitude_mask() const {
    return (1u << (exponent_bits + mantissa_bits)) - 1u;
  }
  // Largest finite magnitude pattern.
  constexpr std::uint32_t max_finite_bits() const {
    switch (specials) {
      case Specials::ieee:
        return (exponent_mask() << mantissa_bits) - 1u;
      case Specials::none:
        return magnitude_mask();
      default:  // fn_nan, e8m0: all ones is NaN
        return magnitude_mask() - 1u;
    }
  }
  constexpr bool has_infinity() const { return specials == Specials::ieee; }
  // Infinity magnitude pattern (only meaningful when has_infinity()).
  constexpr std::uint32_t infinity_bits() const { return exponent_mask() << mantissa_bits; }
};

// What happens to a finite value whose rounded magnitude exceeds the format's max.
// Formats with neither infinity nor NaN (fp6, fp4) always saturate.
enum class Overflow : std::uint8_t {
  to_infinity,  // +-inf; NaN in a format without infinity (float8_e4m3, E8M0)
  saturate,     // +-max
};

struct FormatTraits {
  Format format;
  std::string_view name;
  // The safetensors dtype ("F16", ...); empty when the format has none (cbfloat16, whose
  // tensors safetensors files hold as F32 values).
  std::string_view safetensors_dtype;
  Layout layout;
  FormatUse use;
  // Bytes per element in the arrays encode_array/decode_array read and write: the pattern
  // in the low bits, little-endian (fp6 and fp4 take a byte each there, as ml_dtypes
  // stores them; fp4's packed form, two per byte, is fp4_packing.hpp's).
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
                                   Layout l, FormatUse use, Overflow overflow) {
  const int storage = l.total_bits() <= 8 ? 1 : (l.total_bits() <= 16 ? 2 : 4);
  if (l.specials == Specials::e8m0) {
    // Powers of two 2^-127 .. 2^127, field 0 included (no zero, no subnormals).
    return FormatTraits{f,        name,      dtype,      l,          use, storage,
                        overflow, pow2(127), pow2(-127), pow2(-127), 1.0};
  }
  const int e_max_field = l.specials == Specials::ieee ? static_cast<int>(l.exponent_mask()) - 1
                                                       : static_cast<int>(l.exponent_mask());
  // fn formats lose the all-ones mantissa at the top exponent to NaN.
  const double top_mantissa = l.specials == Specials::fn_nan ? 2.0 - 2.0 * pow2(-l.mantissa_bits)
                                                             : 2.0 - pow2(-l.mantissa_bits);
  return FormatTraits{f,
                      name,
                      dtype,
                      l,
                      use,
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
// The new formats have no safetensors dtype here: a Tensor does not hold them.
inline constexpr std::array<FormatTraits, kFormatCount> kFormatTable = {
    detail::make_traits(Format::float32, "float32", "F32", {8, 23, 127, Specials::ieee},
                        FormatUse::tensor, Overflow::to_infinity),
    detail::make_traits(Format::float16, "float16", "F16", {5, 10, 15, Specials::ieee},
                        FormatUse::tensor, Overflow::to_infinity),
    detail::make_traits(Format::bfloat16, "bfloat16", "BF16", {8, 7, 127, Specials::ieee},
                        FormatUse::tensor, Overflow::to_infinity),
    detail::make_traits(Format::cbfloat16, "cbfloat16", "", {6, 9, 31, Specials::ieee},
                        FormatUse::tensor, Overflow::to_infinity),
    detail::make_traits(Format::float8_e4m3, "float8_e4m3", "F8_E4M3", {4, 3, 7, Specials::fn_nan},
                        FormatUse::tensor, Overflow::saturate),
    detail::make_traits(Format::float8_e5m2, "float8_e5m2", "F8_E5M2", {5, 2, 15, Specials::ieee},
                        FormatUse::tensor, Overflow::to_infinity),
    detail::make_traits(Format::float6_e2m3, "float6_e2m3", "", {2, 3, 1, Specials::none},
                        FormatUse::block_element, Overflow::saturate),
    detail::make_traits(Format::float6_e3m2, "float6_e3m2", "", {3, 2, 3, Specials::none},
                        FormatUse::block_element, Overflow::saturate),
    detail::make_traits(Format::float4_e2m1, "float4_e2m1", "", {2, 1, 1, Specials::none},
                        FormatUse::block_element, Overflow::saturate),
    detail::make_traits(Format::float8_e8m0, "float8_e8m0", "", {8, 0, 127, Specials::e8m0},
                        FormatUse::block_scale, Overflow::to_infinity),
};

static_assert(in_enum_order(kFormatTable, kFormatCount,
                            [](const FormatTraits& t) { return t.format; }),
              "kFormatTable must hold every Format, in enum order");

namespace detail {
// Throws mantissa::Error: `f` (an integer cast to Format) names no row of the table.
[[noreturn]] void throw_not_a_format(Format f);
}  // namespace detail

// Every question about a format goes through here: a value outside the enum is refused
// (mantissa::Error) rather than read past the table.
constexpr const FormatTraits& traits(Format f) {
  const auto row = static_cast<std::size_t>(f);
  if (row >= kFormatCount) detail::throw_not_a_format(f);
  return kFormatTable[row];
}
constexpr bool is_tensor_format(Format f) {
  return traits(f).use == FormatUse::tensor;
}
constexpr const Layout& layout(Format f) {
  return traits(f).layout;
}
constexpr std::string_view name(Format f) {
  return traits(f).name;
}

// "inf, NaN", "no inf, NaN = S.1111.111", "no inf, no NaN" or "unsigned, no zero, NaN = 0xff".
std::string_view specials_description(const Layout& l);

// Parses a format name ("float16", "bfloat16", ...); nullopt when unknown.
std::optional<Format> parse_format(std::string_view name);
// Parses a format name or throws mantissa::Error naming `what` and the allowed names.
Format parse_format_or_throw(std::string_view name, std::string_view what);
// "float32, float16, ..., float8_e8m0" (the table's names)
std::string format_names();
// The role of a format that is not a tensor format, for error messages: "float4_e2m1 is an
// element format of block-scaled tensors (see block_scaling.hpp)"; empty for tensor formats.
std::string format_use_note(Format f);
// The format whose safetensors dtype is `dtype`; nullopt when no format has it.
std::optional<Format> format_of_safetensors_dtype(std::string_view dtype);

}  // namespace mantissa::numerics
