#pragma once
// Scalar value types, one per narrow format, with explicit, named conversions and
// std::numeric_limits specializations. Conversions go through the generic codec, so a
// scalar value and a bulk conversion of the same float give the same bits.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics {

template <Format F>
class Minifloat {
 public:
  static constexpr Format format = F;
  static constexpr Layout layout = numerics::layout(F);
  using storage_type =
      std::conditional_t<traits(F).storage_bytes == 1, std::uint8_t, std::uint16_t>;

  constexpr Minifloat() = default;

  static constexpr Minifloat from_bits(storage_type bits) {
    Minifloat v;
    v.bits_ = bits;
    return v;
  }
  // Rounds x to this format. `random_bits` only matters for Rounding::stochastic.
  static constexpr Minifloat from_float(float x, Rounding rounding = Rounding::nearest_even,
                                        Overflow overflow = traits(F).default_overflow,
                                        std::uint32_t random_bits = 0) {
    return from_bits(static_cast<storage_type>(encode(x, layout, rounding, overflow, random_bits)));
  }
  constexpr explicit Minifloat(float x) : bits_(from_float(x).bits_) {}

  constexpr storage_type bits() const { return bits_; }
  constexpr float to_float() const { return decode(bits_, layout); }
  constexpr explicit operator float() const { return to_float(); }

  // Bitwise identity (NaN == NaN when the patterns agree; +0 and -0 differ).
  constexpr bool same_bits(Minifloat other) const { return bits_ == other.bits_; }

 private:
  storage_type bits_ = 0;
};

using Float16 = Minifloat<Format::float16>;
using BFloat16 = Minifloat<Format::bfloat16>;
using CBFloat16 = Minifloat<Format::cbfloat16>;
using Float8E4M3 = Minifloat<Format::float8_e4m3>;
using Float8E5M2 = Minifloat<Format::float8_e5m2>;
using Float6E2M3 = Minifloat<Format::float6_e2m3>;
using Float6E3M2 = Minifloat<Format::float6_e3m2>;
using Float4E2M1 = Minifloat<Format::float4_e2m1>;  // one code per byte (fp4_packing.hpp packs)
using Float8E8M0 = Minifloat<Format::float8_e8m0>;  // unsigned powers of two, 0xFF NaN

}  // namespace mantissa::numerics

template <mantissa::numerics::Format F>
class std::numeric_limits<mantissa::numerics::Minifloat<F>> {
  using T = mantissa::numerics::Minifloat<F>;
  using S = typename T::storage_type;
  static constexpr mantissa::numerics::Layout L = T::layout;
  static constexpr bool kE8M0 = L.specials == mantissa::numerics::Specials::e8m0;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = L.has_sign();
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = L.has_infinity();
  static constexpr bool has_quiet_NaN = L.has_nan();
  static constexpr bool has_signaling_NaN = false;
  static constexpr std::float_denorm_style has_denorm =
      kE8M0 ? std::denorm_absent : std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = F == mantissa::numerics::Format::float16;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = L.mantissa_bits + 1;
  // floor((digits - 1) * log10(2)), and ceil(1 + digits * log10(2)).
  static constexpr int digits10 = (L.mantissa_bits * 30103) / 100000;
  static constexpr int max_digits10 = 2 + (digits * 30103) / 100000;
  static constexpr int radix = 2;
  // (E8M0's field 0 is 2^-127, a normal number in its terms.)
  static constexpr int min_exponent = (kE8M0 ? 1 : 2) - L.bias;
  static constexpr int max_exponent =
      (L.has_infinity() || kE8M0 ? static_cast<int>(L.exponent_mask()) - 1
                                 : static_cast<int>(L.exponent_mask())) -
      L.bias + 1;
  static constexpr int min_exponent10 = 0;  // not meaningful for these formats; see docs
  static constexpr int max_exponent10 = 0;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr T min() noexcept {
    return T::from_bits(static_cast<S>(kE8M0 ? 0u : 1u << L.mantissa_bits));
  }
  static constexpr T max() noexcept { return T::from_bits(static_cast<S>(L.max_finite_bits())); }
  static constexpr T lowest() noexcept {
    return L.has_sign() ? T::from_bits(static_cast<S>(L.sign_bit() | L.max_finite_bits())) : min();
  }
  static constexpr T epsilon() noexcept {
    // 1 + 2^-m has exponent field `bias`: epsilon = 2^-m, an exponent field of bias - m;
    // where that field is below 1 (fp6 e2m3, fp4) 2^-m is the subnormal 2^(bias - 1) ulps.
    // E8M0 (m = 0): 1, the field `bias`.
    if constexpr (L.bias - L.mantissa_bits >= 1) {
      return T::from_bits(
          static_cast<S>(static_cast<std::uint32_t>(L.bias - L.mantissa_bits) << L.mantissa_bits));
    } else {
      return T::from_bits(static_cast<S>(1u << (L.bias - 1)));
    }
  }
  static constexpr T round_error() noexcept { return T::from_float(0.5f); }
  static constexpr T infinity() noexcept {
    return T::from_bits(static_cast<S>(L.has_infinity() ? L.infinity_bits() : 0u));
  }
  // The zero pattern where the format has no NaN (fp6, fp4): check has_quiet_NaN.
  static constexpr T quiet_NaN() noexcept {
    if constexpr (L.has_infinity()) {
      return T::from_bits(static_cast<S>(L.infinity_bits() | (1u << (L.mantissa_bits - 1))));
    } else {
      return T::from_bits(static_cast<S>(L.has_nan() ? L.magnitude_mask() : 0u));
    }
  }
  static constexpr T signaling_NaN() noexcept { return quiet_NaN(); }
  static constexpr T denorm_min() noexcept { return kE8M0 ? min() : T::from_bits(S{1}); }
};
