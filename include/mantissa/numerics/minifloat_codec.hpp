#pragma once
// The generic minifloat codec: float32 <-> any Layout, on integer arithmetic only. It is the
// definition of every conversion in mantissa; the vectorized paths must match it bit for bit.
//
// Encoding rules (docs/design.md section 2):
// - NaN stays NaN with its sign: in IEEE-style layouts the quiet bit is set and the top
//   payload bits are kept; in fn layouts (float8_e4m3) the result is S.1111.111. Layouts with
//   no NaN (Specials::none: fp6, fp4) give +-max: a NaN is as far from every finite value as
//   an infinity, and in a block-scaled tensor the block's scale carries the NaN.
// - Infinity stays infinity where the layout has one; otherwise (fn) it saturates to max under
//   Overflow::saturate and becomes NaN under Overflow::to_infinity; in Specials::none layouts
//   it is +-max under either.
// - A finite value is rounded on its magnitude (nearest-even, toward zero, or stochastic
//   with the caller's 32 random bits). A rounded magnitude beyond max becomes infinity
//   (NaN in fn layouts) under Overflow::to_infinity and max under Overflow::saturate;
//   rounding toward zero never produces infinity from a finite value (IEEE). Specials::none
//   layouts always saturate.
// - Subnormals of both formats are kept; nothing is flushed to zero.
// - E8M0 (Specials::e8m0) is encode_e8m0's: below.
#include <bit>
#include <cstdint>

#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/rounding.hpp"

namespace mantissa::numerics {

// float32 -> E8M0 (2^(field - 127), field 0..254; 0xFF NaN). A positive finite x between
// powers of two lo <= x < 2*lo rounds on the linear value: nearest gives 2*lo from the
// midpoint 1.5*lo up (ties away from zero: with no mantissa bit both neighbours are
// "odd"; ml_dtypes' float8_e8m0fnu does the same), toward zero gives lo, stochastic gives
// 2*lo with probability (x - lo) / lo. Values below 2^-127 give 0x00 in every mode (there is
// no zero); zero, negative values and NaN give 0xFF; +inf and a rounded value past 2^127
// give 0xFF under Overflow::to_infinity and 0xFE (2^127) under saturate (toward zero: 0xFE).
constexpr std::uint32_t encode_e8m0(float x, Rounding rounding, Overflow overflow,
                                    std::uint32_t random_bits = 0) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if (u == 0x7f800000u) return overflow == Overflow::saturate ? 0xfeu : 0xffu;
  if (u == 0 || u >= 0x7f800000u) return 0xffu;  // zero, NaN, negative (sign bit set)
  if (u < 0x00400000u) return 0x00u;             // below 2^-127
  // The field of the power of two at or below x, and the dropped fraction (x - lo) / lo as
  // 32-bit fixed point.
  const std::uint32_t lo = u < 0x00800000u ? 0u : u >> 23;
  const std::uint32_t frac32 = u < 0x00800000u ? (u - 0x00400000u) << 10 : (u & 0x7fffffu) << 9;
  bool up = false;
  if (rounding == Rounding::nearest_even) {
    up = frac32 >= 0x80000000u;
  } else if (rounding == Rounding::stochastic) {
    up = frac32 + random_bits < frac32;  // carry out of 32 bits
  }
  const std::uint32_t field = lo + (up ? 1u : 0u);
  if (field > 0xfeu) {
    return overflow == Overflow::saturate || rounding == Rounding::toward_zero ? 0xfeu : 0xffu;
  }
  return field;
}

// float32 -> layout. `random_bits` is used only by Rounding::stochastic: the magnitude is
// rounded up exactly when (dropped fraction as 32-bit fixed point) + random_bits >= 2^32.
constexpr std::uint32_t encode(float x, const Layout& l, Rounding rounding, Overflow overflow,
                               std::uint32_t random_bits = 0) {
  if (l.specials == Specials::e8m0) return encode_e8m0(x, rounding, overflow, random_bits);
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 31) << (l.exponent_bits + l.mantissa_bits);
  const std::uint32_t a = u & 0x7fffffffu;
  const int m = l.mantissa_bits;

  // Where the layout has no NaN (Specials::none), the NaN input's result is max.
  const std::uint32_t nan_bits =
      l.specials == Specials::ieee
          ? l.infinity_bits() | (1u << (m - 1)) | ((a & 0x7fffffu) >> (23 - m))
          : (l.has_nan() ? l.magnitude_mask() : l.max_finite_bits());
  const bool saturate = overflow == Overflow::saturate || !l.has_nan();
  if (a > 0x7f800000u) return sign | nan_bits;
  if (a == 0x7f800000u) {
    if (l.has_infinity()) return sign | l.infinity_bits();
    return sign | (saturate ? l.max_finite_bits() : nan_bits);
  }

  // Significand with its hidden bit, and the float32 exponent field (subnormals use 1).
  const int e32 = static_cast<int>(a >> 23);
  const std::uint32_t sig = e32 == 0 ? a : ((a & 0x7fffffu) | 0x800000u);
  const int exp_field = e32 == 0 ? 1 : e32;
  // Target exponent field; at or below 0 the result is a subnormal of the target.
  const int t = exp_field - 127 + l.bias;
  // Bits of `sig` below the target's last mantissa bit.
  const int drop = 23 - m + (t < 1 ? 1 - t : 0);

  std::uint32_t q = 0;  // the kept bits, in units of the target's last place
  bool up = false;
  if (drop == 0) {  // the layout keeps every float32 bit (float32 itself)
    q = sig;
  } else if (drop < 32) {
    q = sig >> drop;
    const std::uint32_t rest = sig & ((1u << drop) - 1u);
    if (rounding == Rounding::nearest_even) {
      const std::uint32_t half = 1u << (drop - 1);
      up = rest > half || (rest == half && (q & 1u));
    } else if (rounding == Rounding::stochastic) {
      const std::uint32_t frac32 = rest << (32 - drop);
      up = frac32 + random_bits < frac32;  // carry out of 32 bits
    }
  } else if (rounding == Rounding::stochastic) {
    const int extra = drop - 32;  // the whole significand is dropped
    const std::uint32_t frac32 = extra < 32 ? sig >> extra : 0u;
    up = frac32 + random_bits < frac32;
  }  // otherwise sig < 2^24 is below half an ulp: nearest and toward zero give zero
  q += up ? 1u : 0u;

  // q holds the hidden bit at position m for normals, so the exponent field is max(t,1)-1
  // plus whatever q carries into it; a carry past the top mantissa bumps the exponent.
  const std::uint32_t mag = (t > 1 ? static_cast<std::uint32_t>(t - 1) << m : 0u) + q;
  if (mag > l.max_finite_bits()) {
    if (saturate || rounding == Rounding::toward_zero) {
      return sign | l.max_finite_bits();
    }
    return sign | (l.has_infinity() ? l.infinity_bits() : nan_bits);
  }
  return sign | mag;
}

// layout -> float32, exact (every format here is a subset of float32). A NaN comes back quiet
// with its sign and payload bits.
constexpr float decode(std::uint32_t bits, const Layout& l) {
  if (l.specials == Specials::e8m0) {
    const std::uint32_t field = bits & 0xffu;
    if (field == 0xffu) return std::bit_cast<float>(0x7fc00000u);
    // Field 0 is 2^-127, a float32 subnormal.
    return std::bit_cast<float>(field == 0 ? 0x00400000u : field << 23);
  }
  const int m = l.mantissa_bits;
  const std::uint32_t sign = ((bits >> (l.exponent_bits + m)) & 1u) << 31;
  const std::uint32_t e = (bits >> m) & l.exponent_mask();
  const std::uint32_t f = bits & l.mantissa_mask();
  std::uint32_t out = 0;
  const bool top = e == l.exponent_mask();
  if (top && l.specials == Specials::ieee) {
    out = f == 0 ? 0x7f800000u : (0x7fc00000u | (f << (23 - m)));
  } else if (top && l.specials == Specials::fn_nan && f == l.mantissa_mask()) {  // fn NaN
    out = 0x7fc00000u | (f << (23 - m));
  } else if (e != 0) {
    out = ((e - static_cast<std::uint32_t>(l.bias) + 127u) << 23) | (f << (23 - m));
  } else if (f != 0) {
    // Subnormal: normalize so the leading one becomes the hidden bit.
    const int lead = 31 - std::countl_zero(f);  // position of the leading one
    const int exp = 1 - l.bias - (m - lead);    // unbiased exponent of the leading one
    if (exp + 127 >= 1) {
      out = (static_cast<std::uint32_t>(exp + 127) << 23) | ((f << (23 - lead)) & 0x7fffffu);
    } else {
      // Also a float32 subnormal (bfloat16): f * 2^(1-bias-m) = (f << (150-bias-m)) * 2^-149.
      out = f << (150 - l.bias - m);
    }
  }
  return std::bit_cast<float>(sign | out);
}

}  // namespace mantissa::numerics
