#pragma once
// The fp8 cast of a tensor for a scaled product (precision/fp8.hpp): dst = fp8(src * scale),
// nearest-even, saturating at the format's max, with what the cast found: the largest |src|
// and how many values overflowed (|src * scale| > max: saturated) or underflowed (nonzero,
// rounded to 0).
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::quant {

struct Fp8CastStats {
  float amax = 0;  // max |src|; NaN when src holds one
  std::int64_t overflows = 0, underflows = 0;
};

// src holds n elements stored in `src_format`; dst gets n elements of `fp8` (1 byte each).
// On all threads (unless inside a parallel region).
Fp8CastStats cast_to_fp8(const void* src, numerics::Format src_format, std::int64_t n, float scale,
                         numerics::Format fp8, void* dst);
// The scalar twin: one codec call per element.
Fp8CastStats cast_to_fp8_ref(const void* src, numerics::Format src_format, std::int64_t n,
                             float scale, numerics::Format fp8, void* dst);

}  // namespace mantissa::quant
