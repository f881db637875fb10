#pragma once
// Internal: 8-lane masks for AVX2 masked loads and stores (a row's last, partial vector).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace mantissa::kernels::detail {

// Lanes 0..n-1 set (n clamped to 0..8), as _mm256_maskload_ps / _mm256_maskstore_ps read it.
inline __m256i first_lanes8(std::int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<std::int64_t>(n, 0, 8))),
                            lane);
}

}  // namespace mantissa::kernels::detail
