#pragma once
// ExactSum: the exact sum of any number of doubles, as a fixed-point integer wide enough for
// every finite double (bit 0 weighs 2^-1074, the smallest subnormal), with room for 2^62
// additions. The sum does not depend on the order of the additions, so sums made on several
// threads and merged give the same bits as one sequential sum; value() rounds it to double
// once (within 2 ulp: the top limbs are added in double from the most significant down).
// Infinities and NaNs are kept apart: value() is then their IEEE sum.
#include <array>
#include <cstdint>

namespace mantissa::numerics {

class ExactSum {
 public:
  void add(double v);
  void add(const ExactSum& other);
  // The sum rounded to double; +-inf past double's range.
  double value() const;
  bool is_zero() const;

 private:
  static constexpr int kDigitBits = 32;
  static constexpr int kLimbs = 70;  // 2,240 bits: 2,098 for doubles, the rest headroom
  static constexpr std::int64_t kNormalizeAfter = std::int64_t{1} << 29;
  void normalize();
  // Digits of 32 bits, kept in signed 64-bit limbs so that additions carry lazily.
  std::array<std::int64_t, kLimbs> limbs_{};
  std::int64_t pending_ = 0;  // additions since the last normalize()
  double special_ = 0;        // the sum of the infinities and NaNs added
};

}  // namespace mantissa::numerics
