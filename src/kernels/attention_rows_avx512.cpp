// Compiled with -mavx512f -mavx512bw; entered only after a CPUID check (attention_rows.cpp).
#include <immintrin.h>

#include <cmath>

#include "attention_rows_avx512.hpp"
#include "bf16_lanes_avx512.hpp"
#include "vector_exp_avx512.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::kernels::detail {

void probabilities_bf16_avx512(const float* s, std::int64_t valid, std::int64_t width, float shift,
                               float* p_out, std::uint16_t* bits) {
  const __m512 sh = _mm512_set1_ps(shift);
  std::int64_t c = 0;
  for (; c < valid; c += 16) {  // the exps, then zeros from the first vector past `valid`
    const __mmask16 m = lanes16(width - c), live = lanes16(valid - c);
    const __m512 x = _mm512_maskz_loadu_ps(live, s + c);
    const __m512i h = _mm512_maskz_mov_epi32(live, bf16_lanes(exp16(_mm512_sub_ps(x, sh))));
    store_bf16_lanes(bits + c, m, h);
    if (p_out != nullptr)
      _mm512_mask_storeu_ps(p_out + c, m, _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
  }
  for (; c < width; c += 16) {
    const __mmask16 m = lanes16(width - c);
    store_bf16_lanes(bits + c, m, _mm512_setzero_si512());
    if (p_out != nullptr) _mm512_mask_storeu_ps(p_out + c, m, _mm512_setzero_ps());
  }
}

float scaled_log_sum_exp_avx512(float* s, std::int64_t n, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (std::int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes16(n - c);
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + c), sc);
    _mm512_mask_storeu_ps(s + c, m, x);
    mx = _mm512_mask_max_ps(mx, m, x, mx);  // x > mx ? x : mx, so a NaN x keeps mx
  }
  const float top = _mm512_reduce_max_ps(mx);
  // exp_shifted's order: eight running lane sums over whole groups of eight (a vector of 16
  // is two such groups, low half first), the lanes added in order, then the rest singly.
  const __m512 sh = _mm512_set1_ps(top);
  __m256 acc = _mm256_setzero_ps();
  std::int64_t c = 0;
  for (; c + 8 <= n; c += 16) {
    const __mmask16 m = lanes16(n - c >= 16 ? 16 : 8);
    const __m512 y = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), sh));
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(y));
    if (m == 0xFFFF) {
      acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y), 1)));
    }
  }
  if (c > n) c -= 8;  // the last group was a single group of eight
  alignas(32) float lane[8];
  _mm256_store_ps(lane, acc);
  float sum = 0;
  for (const float l : lane) sum += l;
  if (c < n) {
    alignas(64) float rest[16];
    _mm512_store_ps(rest, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes16(n - c), s + c), sh)));
    for (std::int64_t i = 0; i < n - c; ++i) sum += rest[i];
  }
  return top + std::log(sum);
}

void score_gradients_bf16_avx512(const float* dp, const float* p, float delta, float scale,
                                 std::int64_t n, std::int64_t width, std::uint16_t* bits) {
  const __m512 d = _mm512_set1_ps(delta), sc = _mm512_set1_ps(scale);
  for (std::int64_t c = 0; c < width; c += 16) {
    const __mmask16 m = lanes16(width - c), live = lanes16(n - c);
    const __m512 g = _mm512_maskz_loadu_ps(live, dp + c), pv = _mm512_maskz_loadu_ps(live, p + c);
    const __m512 ds = _mm512_mul_ps(_mm512_mul_ps(pv, _mm512_sub_ps(g, d)), sc);
    store_bf16_lanes(bits + c, m, _mm512_maskz_mov_epi32(live, bf16_lanes(ds)));
  }
}

}  // namespace mantissa::kernels::detail
