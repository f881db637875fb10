#pragma once
// What one rounding lost: the statistics of "which layer loses what" (docs/mixed_precision.md
// "Which layer loses what"). A rounding takes float32 values x to values q of a narrower
// format, possibly through a scale (q ~ x * scale: fp8's per-tensor scale, a block's scale);
// QuantStats counts what happened to the elements and measures the error:
//   flushed     x finite and nonzero, q zero (underflow)
//   subnormal   q nonzero and below the format's smallest normal (precision lost to range)
//   saturated   |x * scale| above the format's max and q = +-max (clamped)
//   overflowed  x finite, q inf or NaN
//   nonfinite   x already inf or NaN (left out of everything else but `elements`)
// and the signal-to-noise ratio 10 log10(sum x^2 / sum (x - q / scale)^2) in dB over the
// elements with x and q finite. Each term is computed in double from the float32 values and
// the sums are exact (numerics::ExactSum), so the figures do not depend on how the work was
// split over threads.
#include <array>
#include <cstdint>
#include <optional>

#include "mantissa/names.hpp"
#include "mantissa/numerics/exact_sum.hpp"
#include "mantissa/numerics/format.hpp"

namespace mantissa::precision {

using numerics::Format;

// Where in an op a rounding happens. The first three are the operands of a product as fp8 and
// block-scaled recipes name them (Transformer Engine's forward input, weight and output
// gradient); the last two are the roundings to H of a matrix op's results.
enum class QuantRole : std::uint8_t {
  input,       // the forward input (activation), or a product's first operand
  weight,      // the weight, or a product's second operand
  grad,        // the output gradient as the op's backward reads it
  output,      // the forward result, rounded to H
  input_grad,  // a gradient the backward makes for an input, rounded to H
};
inline constexpr std::size_t kQuantRoleCount = 5;
inline constexpr NameTable<QuantRole, kQuantRoleCount> kQuantRoleNames = {{
    {"input", QuantRole::input},
    {"weight", QuantRole::weight},
    {"grad", QuantRole::grad},
    {"output", QuantRole::output},
    {"input_grad", QuantRole::input_grad},
}};
static_assert(in_enum_order(kQuantRoleNames, kQuantRoleCount));
static_assert(static_cast<std::size_t>(QuantRole::input_grad) + 1 == kQuantRoleCount);

struct QuantCounts {
  std::int64_t elements = 0, flushed = 0, subnormal = 0, saturated = 0, overflowed = 0,
               nonfinite = 0;
  bool operator==(const QuantCounts&) const = default;
  QuantCounts& operator+=(const QuantCounts& o) {
    elements += o.elements;
    flushed += o.flushed;
    subnormal += o.subnormal;
    saturated += o.saturated;
    overflowed += o.overflowed;
    nonfinite += o.nonfinite;
    return *this;
  }
};

class QuantStats {
 public:
  explicit QuantStats(Format format = Format::float32) : format_(format) {}

  // n values x rounded to q, q holding the format's values (decoded, unscaled): q ~ x * scale.
  void add(const float* x, const float* q, std::int64_t n, double scale = 1.0);
  // A block-scaled quantization: n values x whose element values are q (decoded, unscaled),
  // element i standing for q[i] * tile_scale[i] * tensor_scale (an MX block's 2^e, a block's
  // float32 or e4m3 scale; NVFP4's per-tensor decode scale, 1 elsewhere). The error
  // x - q * tile_scale * tensor_scale is computed in double (exact: a few element bits times
  // two floats); saturated means |x| > max * tile_scale * tensor_scale and |q| = max. The
  // scale range takes every tile_scale[i] * tensor_scale.
  void add_elements(const float* x, const float* q, std::int64_t n, const float* tile_scale,
                    double tensor_scale = 1.0);
  // Widens the scale range by a scale the rounding used (record the recipe's own scale: fp8's
  // multiplier, a block's divisor).
  void note_scale(double scale);
  // Adds another's figures (the same format; else mantissa::Error naming both).
  void merge(const QuantStats& other);

  Format format() const { return format_; }
  const QuantCounts& counts() const { return counts_; }
  double signal() const { return signal_.value(); }  // sum x^2
  double noise() const { return noise_.value(); }    // sum (x - q / scale)^2
  // 10 log10(signal / noise); nullopt when nothing was lost (noise 0: every value exact).
  std::optional<double> snr_db() const;
  struct ScaleRange {
    double min = 0, max = 0;
    bool operator==(const ScaleRange&) const = default;
  };
  std::optional<ScaleRange> scale_range() const { return scale_; }

 private:
  Format format_;
  QuantCounts counts_;
  numerics::ExactSum signal_, noise_;
  std::optional<ScaleRange> scale_;
};

}  // namespace mantissa::precision
