#pragma once
// The float32 -> {fp4, fp6, E8M0} round-to-nearest fixtures written by ml_dtypes
// (fixtures/make_block_format_fixtures.py): runs of float32 patterns that encode to one code.
// And an exact reference for E8M0 in every rounding mode, written apart from the codec.
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/numerics/format.hpp"

namespace mantissa::testing {

class RunFixture {
 public:
  // Reads fixtures/<format name>_rne_runs.txt; throws std::runtime_error naming the file and
  // line when it is missing or malformed (the runs must start at 0 and increase).
  explicit RunFixture(numerics::Format format);
  // The code ml_dtypes gives the float32 pattern `bits`; -1 where the fixture skips it (NaN).
  int code(std::uint32_t bits) const;
  // The first pattern of every run: the rounding boundaries.
  std::vector<std::uint32_t> boundaries() const;

 private:
  std::vector<std::uint32_t> starts_;
  std::vector<int> codes_;
};

// E8M0 (2^(field - 127), field 0..254, 0xFF NaN) by exact arithmetic in double: zero,
// negative and NaN inputs give 0xFF, values below 2^-127 give 0x00; a value x with
// lo <= x < 2 lo (lo a power of two) gives lo, or 2 lo when rounding up: nearest from 1.5 lo
// up, stochastic when floor((x - lo) / lo * 2^32) + random >= 2^32; a result past 2^127 gives
// 0xFE when saturating or rounding toward zero, else 0xFF.
std::uint32_t ref_encode_e8m0(float x, bool toward_zero, bool stochastic, bool saturate,
                              std::uint32_t random);

}  // namespace mantissa::testing
