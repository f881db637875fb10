#pragma once
// Internal: one step of the AVX512-BF16 dot instruction, and one chunk of AMX's TDPBF16PS, in
// scalar arithmetic, for the scalar twins of every kernel that uses them (gemm_bf16_ref,
// bf16_pair_product_ref, gemm_amx_ref, amx_pair_product_ref).
#include <cmath>
#include <cstdint>

namespace mantissa::kernels::detail {

// Subnormal inputs read as zero, the product exact (bf16 values), the sum rounded to float32
// and flushed to zero when subnormal.
inline float daz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline float dot_step(float acc, float x, float y) {
  return daz(std::fma(daz(x), daz(y), daz(acc)));
}

// Pairs in one TDPBF16PS chunk (amx_pairs.hpp).
inline constexpr std::int64_t kAmxChunkPairs = 16;

// c after one TDPBF16PS chunk of `pairs` (<= 16) pairs, pair(p, a0, b0, a1, b1) giving pair p's
// even (a0 b0) and odd (a1 b1) operands, the chunk's other pairs +0: the even and the odd
// products in two chains from +0, each step one rounding and a flush, the chains' sum added to
// c (amx_pairs.hpp). The zero pairs count: they turn a chain's -0 into +0, as the tiles do.
template <class Pair>
float amx_chunk(float c, std::int64_t pairs, const Pair& pair) {
  float even = 0.0f, odd = 0.0f;
  for (std::int64_t p = 0; p < kAmxChunkPairs; ++p) {
    float a0 = 0, b0 = 0, a1 = 0, b1 = 0;
    if (p < pairs) pair(p, a0, b0, a1, b1);
    even = daz(std::fma(daz(a0), daz(b0), even));
    odd = daz(std::fma(daz(a1), daz(b1), odd));
  }
  return daz(daz(c) + daz(even + odd));
}

}  // namespace mantissa::kernels::detail
