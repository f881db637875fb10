#pragma once
// Internal: one step of the AVX512-BF16 dot instruction in scalar arithmetic, for the scalar
// twins of every kernel that uses it (gemm_bf16_ref, bf16_pair_product_ref).
#include <cmath>

namespace mantissa::kernels::detail {

// Subnormal inputs read as zero, the product exact (bf16 values), the sum rounded to float32
// and flushed to zero when subnormal.
inline float daz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline float dot_step(float acc, float x, float y) {
  return daz(std::fma(daz(x), daz(y), daz(acc)));
}

}  // namespace mantissa::kernels::detail
