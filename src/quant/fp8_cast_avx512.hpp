#pragma once
// Internal: the fp8 cast (fp8_cast.cpp) 16 elements a step on the AVX-512 units, compiled
// with -mavx512f -mavx512bw (fp8_cast_avx512.cpp), entered only when
// numerics::active_simd_path() is avx512. Only plain types cross this boundary.
#include <cstdint>

#include "block_bands_avx512.hpp"

namespace mantissa::quant::detail {

// What a cast found, on magnitude bit patterns (which order non-negative floats as integers
// do, NaNs above infinity): the largest |x|, the values whose |x * scale| passed max_finite
// (infinities included, NaNs not) and the nonzero ones whose |x * scale| is at most half the
// smallest subnormal (rounded to 0).
struct Fp8Tally {
  std::uint32_t amax = 0;
  std::int64_t overflows = 0, underflows = 0;
};

// dst[i] = the code of x[i] * scale in the grid g (nearest-even, saturating; an infinity or
// NaN through the codec), x float32 or bfloat16 (bf16); tally: max_finite and half_subnormal
// as magnitude bits.
void fp8_cast_avx512(const void* x, bool bf16, std::int64_t n, float scale, const BandGrid& g,
                     const ElementCodec& codec, std::uint32_t max_finite,
                     std::uint32_t half_subnormal, Fp8Tally& tally, std::uint8_t* dst);

}  // namespace mantissa::quant::detail
