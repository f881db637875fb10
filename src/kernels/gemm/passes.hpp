#pragma once
// Internal: the exact bf16 decomposition as a list of passes (docs/design.md section 3). Pass p
// multiplies one part of A by one part of B over the whole inner dimension; the product is the
// sum over the concatenated inner dimension of all passes, in pass order.
#include <bit>
#include <cmath>
#include <cstdint>

#include "mantissa/kernels/gemm.hpp"

namespace mantissa::kernels::gemm_detail {

// Which value of an element a pass reads.
enum class Part : std::uint8_t {
  whole,  // the value itself
  hi,     // bf16(x), nearest-even
  lo,     // bf16(x - bf16(x)); 0 where x is not finite
};

struct Pass {
  Part a = Part::whole, b = Part::whole;
};

struct PassList {
  Pass pass[4];
  int count = 1;
};

// The passes a precision asks for on the fp32 FMA route (native = false) or on bf16 units
// (native = true). Throws mantissa::Error for a pass count other than 1, 3 or 4.
PassList passes_for(const GemmPrecision& p, bool native);

// bf16(x) with nearest-even rounding, overflow to infinity, NaN kept: float32 bit arithmetic.
inline float bf16_nearest(float x) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;  // NaN
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return std::bit_cast<float>(u);
}

inline float part_value(float x, Part part) {
  switch (part) {
    case Part::whole:
      return x;
    case Part::hi:
      return bf16_nearest(x);
    case Part::lo:
      return std::isfinite(x) ? bf16_nearest(x - bf16_nearest(x)) : 0.0f;
  }
  return x;
}

// x[i] = part_value(x[i], part) for n values (nothing for Part::whole).
void apply_part(float* x, std::int64_t n, Part part);

// out[i] = the bfloat16 bits of part_value(x[i], part) for n values whose part is a bf16
// value (hi, lo, or whole for bf16 values), a NaN kept a NaN (its quiet bit set).
void part_bits(const float* x, std::int64_t n, Part part, std::uint16_t* out);

}  // namespace mantissa::kernels::gemm_detail
