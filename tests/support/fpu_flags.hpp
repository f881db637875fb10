#pragma once
// Sets the SSE control register's flush-to-zero and denormals-are-zero flags for a scope (as
// a program built with -ffast-math, or a library that sets them, would run us) and restores
// the register afterwards, also when a check fails.
#include <xmmintrin.h>

namespace mantissa::testing {

class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

  static constexpr unsigned kFtz = 1u << 15;  // results below float's smallest normal -> 0
  static constexpr unsigned kDaz = 1u << 6;   // subnormal operands read as 0

 private:
  unsigned saved_;
};

}  // namespace mantissa::testing
