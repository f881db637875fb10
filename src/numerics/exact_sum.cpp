#include "mantissa/numerics/exact_sum.hpp"

#include <bit>
#include <cmath>

namespace mantissa::numerics {

void ExactSum::add(double v) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(v);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  if (biased == 0x7FF) {  // inf or NaN
    special_ += v;
    return;
  }
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0 && fraction == 0) return;  // +-0
  // |v| = m * 2^(p - 1074): subnormals have p = 0 and no implicit bit.
  const std::uint64_t m = biased == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
  const int p = biased == 0 ? 0 : biased - 1;
  const int i = p / kDigitBits;
  const unsigned __int128 w = static_cast<unsigned __int128>(m) << (p % kDigitBits);
  const auto digit = [&](int k) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(w >> (kDigitBits * k)) &
                                     0xFFFFFFFFu);
  };
  if (v < 0) {
    limbs_[i] -= digit(0);
    limbs_[i + 1] -= digit(1);
    limbs_[i + 2] -= digit(2);
  } else {
    limbs_[i] += digit(0);
    limbs_[i + 1] += digit(1);
    limbs_[i + 2] += digit(2);
  }
  if (++pending_ >= kNormalizeAfter) normalize();
}

void ExactSum::add(const ExactSum& other) {
  for (int i = 0; i < kLimbs; ++i) limbs_[i] += other.limbs_[i];
  special_ += other.special_;
  pending_ += other.pending_ + 1;
  if (pending_ >= kNormalizeAfter) normalize();
}

void ExactSum::normalize() {
  // Every digit into [0, 2^32), the carries moved up; the top limb keeps the sign.
  for (int i = 0; i + 1 < kLimbs; ++i) {
    const std::int64_t carry = limbs_[i] >> kDigitBits;  // floor division
    limbs_[i] &= 0xFFFFFFFF;
    limbs_[i + 1] += carry;
  }
  pending_ = 0;
}

double ExactSum::value() const {
  ExactSum s = *this;
  s.normalize();
  double sign = 1;
  if (s.limbs_[kLimbs - 1] < 0) {
    for (std::int64_t& limb : s.limbs_) limb = -limb;
    s.normalize();
    sign = -1;
  }
  int top = kLimbs - 1;
  while (top >= 0 && s.limbs_[top] == 0) --top;
  double sum = 0;
  // Four digits (128 bits) hold the 53 that a double keeps with room for its rounding.
  for (int i = top; i >= 0 && i > top - 4; --i) {
    sum += std::ldexp(static_cast<double>(s.limbs_[i]), kDigitBits * i - 1074);
  }
  return special_ + sign * sum;
}

bool ExactSum::is_zero() const {
  ExactSum s = *this;
  s.normalize();
  for (const std::int64_t limb : s.limbs_) {
    if (limb != 0) return false;
  }
  return special_ == 0;
}

}  // namespace mantissa::numerics
