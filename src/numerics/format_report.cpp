#include "mantissa/numerics/format_report.hpp"

#include <fmt/format.h>
#include <cctype>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics {
namespace {

std::string hex_bits(std::uint32_t bits, int total_bits) {
  return fmt::format("0x{:0{}x}", bits, (total_bits + 3) / 4);
}

std::string binary_fields(std::uint32_t bits, const Layout& l) {
  const int e = l.exponent_bits, m = l.mantissa_bits;
  if (l.specials == Specials::e8m0) return fmt::format("{:08b}", bits & 0xffu);  // exponent only
  return fmt::format("{:b}.{:0{}b}.{:0{}b}", (bits >> (e + m)) & 1u,
                     (bits >> m) & l.exponent_mask(), e, bits & l.mantissa_mask(), m);
}

std::string classify(std::uint32_t bits, const Layout& l) {
  const std::uint32_t e = (bits >> l.mantissa_bits) & l.exponent_mask();
  const std::uint32_t f = bits & l.mantissa_mask();
  const float v = decode(bits, l);
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return "infinity";
  if (l.specials == Specials::e8m0) return "power of two";
  if (e == 0) return f == 0 ? "zero" : "subnormal";
  return "normal";
}

std::string relative_error(double exact, double got) {
  if (std::isnan(exact) || std::isnan(got)) return "-";
  if (exact == got) return "0";
  if (std::isinf(got) || std::isinf(exact)) return "inf";
  if (exact == 0.0) return "inf";
  return fmt::format("{:.3e}", std::fabs(got - exact) / std::fabs(exact));
}

// X as the largest magnitude of a block-scaled tile: the scale each recipe and rule gives
// the tile, X's element code and the value it stands for.
std::string block_rows(float x, double exact) {
  std::string out =
      "\nas the largest magnitude (amax) of a block: the block's scale and X's element\n";
  out += fmt::format("{:<8} {:<12} {:<6} {:<14} {:<8} {:>16} {:>10}\n", "recipe", "element", "rule",
                     "scale", "element", "value", "rel.error");
  const auto row = [&](const char* recipe, Format element, std::string_view rule,
                       const BlockQuantized& q) {
    float v = 0;
    dequantize(q, &v);
    const std::vector<std::uint8_t> codes = q.scale_codes();
    const std::string scale = q.scale_format == Format::float32
                                  ? fmt::format("{:.6g}", q.scales[0])
                                  : fmt::format("0x{:02x} {:.6g}", codes[0], q.scales[0]);
    out +=
        fmt::format("{:<8} {:<12} {:<6} {:<14} 0x{:<6x} {:>16.9g} {:>10}\n", recipe, name(element),
                    rule, scale, q.elements[0] & (element == Format::float4_e2m1 ? 0xfu : 0xffu), v,
                    relative_error(exact, v));
  };
  for (Format e : kBlockElementFormats) {
    for (const auto& [rule_name, rule] : kMxScaleRuleNames) {
      MxSettings s;
      s.element = e;
      s.rule = rule;
      row("MX", e, rule_name, quantize_mx(&x, 1, 1, s));
    }
  }
  row("NVFP4", Format::float4_e2m1, "-", quantize_nvfp4(&x, 1, 1, Nvfp4Settings{}));
  for (Format e : {Format::float8_e4m3, Format::float8_e5m2}) {
    Fp8BlockSettings s;
    s.element = e;
    row("fp8 blk", e, "pow2", quantize_fp8_blocks(&x, 1, 1, s));
    s.power_of_two = false;
    row("fp8 blk", e, "fp32", quantize_fp8_blocks(&x, 1, 1, s));
  }
  return out;
}

}  // namespace

std::string format_table_report() {
  std::string out =
      fmt::format("{:<12} {:>7} {:>5} {:>16} {:>12} {:>14} {:>12}  {}\n", "format", "s/e/m", "bias",
                  "max", "min normal", "min subnormal", "epsilon", "specials");
  for (const FormatTraits& t : kFormatTable) {
    const Layout& l = t.layout;
    const char* use = t.use == FormatUse::block_element ? "; block-scaled element"
                      : t.use == FormatUse::block_scale ? "; block scale"
                                                        : "";
    const char* saturates =
        t.default_overflow == Overflow::saturate ? "; saturates by default" : "";
    out += fmt::format(
        "{:<12} {:>7} {:>5} {:>16.10g} {:>12.6g} {:>14.6g} {:>12.6g}  {}{}{}\n", t.name,
        fmt::format("{}/{}/{}", l.has_sign() ? 1 : 0, l.exponent_bits, l.mantissa_bits), l.bias,
        t.max, t.min_normal, t.min_subnormal, t.epsilon, specials_description(l), saturates, use);
  }
  out +=
      "\nfloat4_e2m1 arrays hold one element per byte; packed, two per byte (even index in the "
      "low nibble).\nBlock-scaled elements and scales are not tensor formats: see "
      "numerics/block_scaling.hpp.\n";
  return out;
}

std::string value_report(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double exact = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]))) {
    throw Error(
        fmt::format("--value: '{}' is not a number (expected e.g. 0.1, -3e-5, 0x1p-14, "
                    "inf or nan)",
                    s));
  }
  // Past double's range the written value is not what is shown: its error would read 0.
  if (errno == ERANGE && (std::isinf(exact) || exact == 0.0)) {
    throw Error(
        fmt::format("--value: '{}' is {} a double's range (magnitudes from about "
                    "4.9e-324 to 1.8e+308), so its rounding errors cannot be shown",
                    s, exact == 0.0 ? "below" : "beyond"));
  }
  const float x = static_cast<float>(exact);
  std::string out = fmt::format("value {} (as written: {:.17g})\n", s, exact);
  out += fmt::format("{:<12} {:<13} {:<10} {:<26} {:>16} {:>10}\n", "format", "rounding", "bits",
                     "s.exponent.mantissa", "value", "rel.error");
  const Layout& l32 = layout(Format::float32);
  const std::uint32_t b32 = encode(x, l32, Rounding::nearest_even, Overflow::to_infinity);
  out += fmt::format("{:<12} {:<13} {:<10} {:<26} {:>16.9g} {:>10}\n", "float32", "nearest_even",
                     hex_bits(b32, 32), binary_fields(b32, l32), x, relative_error(exact, x));
  for (Format f : kNarrowFormats) {
    const FormatTraits& t = traits(f);
    const Layout& l = t.layout;
    for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero}) {
      const std::uint32_t b = encode(x, l, r, t.default_overflow);
      const double v = decode(b, l);
      out += fmt::format("{:<12} {:<13} {:<10} {:<26} {:>16.9g} {:>10}\n", t.name, rounding_name(r),
                         hex_bits(b, l.total_bits()), binary_fields(b, l), v,
                         relative_error(exact, v));
    }
    // Stochastic: the two neighbours and the probability of rounding away from zero.
    const std::uint32_t down = encode(x, l, Rounding::toward_zero, t.default_overflow);
    const std::uint32_t up = encode(x, l, Rounding::stochastic, t.default_overflow, 0xffffffffu);
    if (down == up) {
      out += fmt::format("{:<12} {:<13} always {}\n", t.name, "stochastic",
                         hex_bits(down, l.total_bits()));
    } else {
      const double vd = decode(down, l), vu = decode(up, l);
      // Rounding up from the largest finite value overflows to inf, with the probability of
      // reaching the next value the exponent would give (largest + its spacing, 2^(emax+1)).
      int e = 0;
      (void)std::frexp(vd, &e);  // |vd| = m 2^e, m in [0.5, 1): a normal's spacing 2^(e-1-mbits)
      const double step = std::isinf(vu) ? std::ldexp(1.0, e - 1 - l.mantissa_bits) : vu - vd;
      const double p = std::fabs((static_cast<double>(x) - vd) / step);
      out += fmt::format("{:<12} {:<13} {} ({:.9g}) with p={:.6f}, else {} ({:.9g})\n", t.name,
                         "stochastic", hex_bits(up, l.total_bits()), vu, p,
                         hex_bits(down, l.total_bits()), vd);
    }
  }
  return out + block_rows(x, exact);
}

std::string bits_report(std::string_view bits_text, Format format) {
  const std::string s(bits_text);
  const Layout& l = layout(format);
  std::string digits = s;
  int base = 10;
  if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) {
    base = 16;
    digits = s.substr(2);
  } else if (s.rfind("0b", 0) == 0 || s.rfind("0B", 0) == 0) {
    base = 2;
    digits = s.substr(2);
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(digits.c_str(), &end, base);
  if (digits.empty() || digits[0] == '-' || digits[0] == '+' ||
      end != digits.c_str() + digits.size() || errno == ERANGE) {
    throw Error(
        fmt::format("--bits: '{}' is not a bit pattern (expected hex 0x..., binary "
                    "0b... or a decimal integer)",
                    s));
  }
  const unsigned long long limit = (1ull << l.total_bits()) - 1ull;
  if (v > limit) {
    throw Error(fmt::format("--bits: {} does not fit {} ({} bits, at most {})", s, name(format),
                            l.total_bits(),
                            hex_bits(static_cast<std::uint32_t>(limit), l.total_bits())));
  }
  const auto bits = static_cast<std::uint32_t>(v);
  const float value = decode(bits, l);
  return fmt::format("{} {}  {}  {}  value {:.9g} (exactly {:a})\n", name(format),
                     hex_bits(bits, l.total_bits()), binary_fields(bits, l), classify(bits, l),
                     value, static_cast<double>(value));
}

}  // namespace mantissa::numerics
