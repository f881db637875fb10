// quantize_to_bf16 (block_operand.hpp): a power-of-two-scaled operand's values straight from
// the high-precision matrix, without element codes, on the quantizers' bands (block_bands.hpp:
// AVX-512 or AVX2); elsewhere (the scalar path, tiles the bands do not take) as its twin
// does it, quantize_packed followed by dequantize_to_bf16.
#include <string>

#include "block_bands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/quant/block_operand.hpp"

namespace mantissa::quant {

bool quantize_to_bf16_takes(const BlockSpec& spec) {
  if (!detail::valid_settings(spec)) return false;
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) {
    return mx->rounding == numerics::Rounding::nearest_even;
  }
  if (const auto* f = std::get_if<numerics::Fp8BlockSettings>(&spec)) {
    return f->power_of_two && f->rounding == numerics::Rounding::nearest_even;
  }
  return false;
}

bool quantize_to_bf16(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                      const BlockSpec& spec, std::uint16_t* out) {
  check_sizes("quantize_to_bf16", rows, cols);
  if (!quantize_to_bf16_takes(spec) ||
      (x_format != Format::float32 && x_format != Format::bfloat16)) {
    throw Error(
        "quantize_to_bf16: takes MX or power-of-two fp8 blocks with nearest-even "
        "rounding, valid tiles and element formats, float32 or bfloat16 input (got " +
        std::string(numerics::name(x_format)) + " input)");
  }
  if (const std::optional<bool> fast =
          detail::quantize_to_bf16_bands(x, x_format, rows, cols, spec, out)) {
    return *fast;
  }
  return dequantize_to_bf16(quantize_packed(x, x_format, rows, cols, spec), out);
}

}  // namespace mantissa::quant
