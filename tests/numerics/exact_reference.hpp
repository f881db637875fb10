#pragma once
// An independent, exact reference for the number formats, written apart from the codec:
// decoding by integer arithmetic and ldexp in double, encoding by searching the sorted list
// of every finite value of the format. Used only by tests.
#include <cstdint>
#include <vector>

namespace mantissa::testing {

struct RefFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;    // false: OCP "fn" (only all-ones is NaN), or no NaN at all
  bool has_nan = true;  // false: OCP fp6 / fp4, every pattern finite; they always saturate,
                        // and a NaN input gives +-max (mantissa's documented choice)
};

enum class RefRounding { nearest_even, toward_zero, stochastic };

// The value of `bits` (NaN for NaN patterns).
double ref_decode(std::uint32_t bits, const RefFormat& f);

class RefEncoder {
 public:
  explicit RefEncoder(const RefFormat& f);
  // `saturate`: overflow to max instead of infinity (NaN where there is no infinity); formats
  // without NaN saturate whatever it says.
  // `random` is used by stochastic rounding: round away from zero exactly when
  // floor(p * 2^32) + random >= 2^32, p = (|x| - lower) / (upper - lower).
  std::uint32_t encode(float x, RefRounding rounding, bool saturate, std::uint32_t random) const;

 private:
  RefFormat f_;
  std::vector<double> values_;  // values_[i] = value of the non-negative pattern i
  std::uint32_t max_index_ = 0;
  double top_spacing_ = 0;  // distance between max and the next value with unbounded exponent
  std::uint32_t inf_bits_ = 0, nan_bits_ = 0;
};

}  // namespace mantissa::testing
