#include "exact_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace mantissa::testing {

double ref_decode(std::uint32_t bits, const RefFormat& f) {
  const int m = f.mantissa_bits;
  const std::uint32_t e_all = (1u << f.exponent_bits) - 1u;
  const bool negative = ((bits >> (f.exponent_bits + m)) & 1u) != 0;
  const std::uint32_t e = (bits >> m) & e_all;
  const std::uint32_t frac = bits & ((1u << m) - 1u);
  double v = 0;
  if (f.has_infinity && e == e_all) {
    v = frac == 0 ? std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_infinity && f.has_nan && e == e_all && frac == (1u << m) - 1u) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(frac), 1 - f.bias - m);
  } else {
    v = std::ldexp(static_cast<double>(frac + (1u << m)), static_cast<int>(e) - f.bias - m);
  }
  return negative ? -v : v;
}

RefEncoder::RefEncoder(const RefFormat& f) : f_(f) {
  const int m = f.mantissa_bits;
  const std::uint32_t e_all = (1u << f.exponent_bits) - 1u;
  inf_bits_ = e_all << m;
  const std::uint32_t positive_patterns = 1u << (f.exponent_bits + m);
  for (std::uint32_t i = 0; i < positive_patterns; ++i) {
    const double v = ref_decode(i, f);
    if (!std::isfinite(v)) break;
    values_.push_back(v);
  }
  max_index_ = static_cast<std::uint32_t>(values_.size() - 1);
  // Spacing in the top binade: that of the largest exponent's mantissa step.
  top_spacing_ = values_[max_index_] - values_[max_index_ - 1];
  nan_bits_ = f.has_infinity ? (inf_bits_ | (1u << (m - 1)))
                             : (f.has_nan ? positive_patterns - 1u : max_index_);
}

std::uint32_t RefEncoder::encode(float x, RefRounding rounding, bool saturate,
                                 std::uint32_t random) const {
  std::uint32_t xbits = 0;
  std::memcpy(&xbits, &x, sizeof(x));
  const std::uint32_t sign = (xbits >> 31) << (f_.exponent_bits + f_.mantissa_bits);
  if (std::isnan(x)) {
    if (!f_.has_infinity) return sign | nan_bits_;  // fn NaN, or max without NaN
    // Quiet bit set, the top payload bits of the float32 NaN kept.
    const std::uint32_t payload = (xbits & 0x7fffffu) >> (23 - f_.mantissa_bits);
    return sign | nan_bits_ | payload;
  }
  const std::uint32_t max_bits = max_index_;
  const std::uint32_t overflow_bits =
      saturate || !f_.has_nan ? max_bits : (f_.has_infinity ? inf_bits_ : nan_bits_);
  if (std::isinf(x)) return sign | (f_.has_infinity ? inf_bits_ : overflow_bits);

  const double ax = std::fabs(static_cast<double>(x));
  // Largest index whose value is <= ax.
  const auto it = std::upper_bound(values_.begin(), values_.end(), ax);
  const auto lo = static_cast<std::uint32_t>(it - values_.begin() - 1);
  const double vlo = values_[lo];
  if (vlo == ax) return sign | lo;
  // Upper neighbour; past max it is max + top spacing (the next value with unbounded range).
  const std::uint32_t hi = lo + 1;
  const double vhi = hi <= max_index_ ? values_[hi] : values_[max_index_] + top_spacing_;
  if (ax > vhi) {  // beyond even the unbounded neighbour of max
    return sign | (rounding == RefRounding::toward_zero ? max_bits : overflow_bits);
  }
  std::uint32_t pick = lo;
  switch (rounding) {
    case RefRounding::toward_zero:
      pick = lo;
      break;
    case RefRounding::nearest_even: {
      const double dlo = ax - vlo, dhi = vhi - ax;
      pick = dlo < dhi ? lo : (dhi < dlo ? hi : ((lo % 2 == 0) ? lo : hi));
      break;
    }
    case RefRounding::stochastic: {
      const double p = (ax - vlo) / (vhi - vlo);  // exact: the spacing is a power of two
      const double fixed = std::floor(std::ldexp(p, 32));
      pick = fixed + static_cast<double>(random) >= std::ldexp(1.0, 32) ? hi : lo;
      break;
    }
  }
  if (pick > max_index_) return sign | overflow_bits;
  return sign | pick;
}

}  // namespace mantissa::testing
