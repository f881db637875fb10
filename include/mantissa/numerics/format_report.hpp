#pragma once
// Human-readable reports on the formats: the table `mantissa formats` prints, where a value
// lands in every format, and what a bit pattern means.
#include <cstdint>
#include <string>
#include <string_view>

#include "mantissa/numerics/format.hpp"

namespace mantissa::numerics {

// One row per format: layout, bias, max, min normal, min subnormal, epsilon, specials.
std::string format_table_report();

// `text` as a number (decimal, hex float, inf, nan), rounded to float32 first (as mantissa
// does) and from there to every narrower format under each rounding mode: bits, value,
// relative error against the number as written. Throws mantissa::Error if `text` is not a
// number.
std::string value_report(std::string_view text);

// Decodes `bits_text` ("0x3c00", "15360", "0b0011110000000000") as a pattern of `format`.
// Throws mantissa::Error naming the argument when the text is not a number or does not fit
// the format's width.
std::string bits_report(std::string_view bits_text, Format format);

}  // namespace mantissa::numerics
