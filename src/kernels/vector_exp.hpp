#pragma once
// Internal: exp over float arrays, 8 lanes at a time with AVX2 + FMA, and a scalar twin that
// computes the same formula (so a value's result does not depend on its position).
//   exp(x) = 2^n * p(r), n = round(x / ln 2), r = x - n ln 2 (two-part ln 2), |r| <= ln2 / 2,
//   p the degree-6 Taylor polynomial of e^r (relative error < 2e-7, about 1.5 ulp).
// The exponent is applied by adding n to p's exponent field, valid for -125 <= n <= 127:
// x below -86.99 (exp < 1.9e-38, near the smallest normal float) gives 0, and x above 88.37
// gives inf (exp there is within 1.2x of the largest float).
#include <immintrin.h>  // the vector path needs AVX2 + FMA at compile time (-march)

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mantissa::kernels::detail {

constexpr float kExpLow = -86.99f;
constexpr float kExpHigh = 88.37f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // exact in few bits: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpC[7] = {1.0f,         1.0f,          0.5f,         1.0f / 6.0f,
                            1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f};

inline float exp_scalar(float x) {
  if (std::isnan(x)) return x;
  if (x < kExpLow) return 0.0f;
  if (x > kExpHigh) return INFINITY;
  const float n = std::nearbyint(x * kLog2e);
  const float r = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
  float p = kExpC[6];
  for (int i = 5; i >= 0; --i) p = std::fma(p, r, kExpC[i]);
  const std::int32_t e = static_cast<std::int32_t>(n);
  std::uint32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += static_cast<std::uint32_t>(e) << 23;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 exp_avx2(__m256 x) {
  const __m256 too_low = _mm256_cmp_ps(x, _mm256_set1_ps(kExpLow), _CMP_LT_OQ);
  const __m256 too_high = _mm256_cmp_ps(x, _mm256_set1_ps(kExpHigh), _CMP_GT_OQ);
  const __m256 xc =
      _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLow)), _mm256_set1_ps(kExpHigh));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpC[6]);
  for (int i = 5; i >= 0; --i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC[i]));
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  __m256 y = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
  y = _mm256_andnot_ps(too_low, y);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), too_high);
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(y, x, is_nan);
}
#endif

// y[i] = exp(x[i] - shift); returns the sum of the y[i] (in float, lane-wise then reduced).
inline float exp_shifted(const float* x, float* y, std::int64_t n, float shift) {
  std::int64_t i = 0;
  float sum = 0;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc = _mm256_setzero_ps();
  const __m256 s = _mm256_set1_ps(shift);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, v);
    acc = _mm256_add_ps(acc, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; i < n; ++i) {
    y[i] = exp_scalar(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

}  // namespace mantissa::kernels::detail
