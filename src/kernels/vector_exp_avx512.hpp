#pragma once
// Internal, for the files compiled with -mavx512f (after <immintrin.h>): vector_exp.hpp's
// exp in 16 lanes, the same operations per lane as exp_avx2, so the same bits.
#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include <cmath>

#include "vector_exp.hpp"

namespace mantissa::kernels::detail {

inline __m512 exp16(__m512 x) {
  const __mmask16 too_low = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpLow), _CMP_LT_OQ);
  const __mmask16 too_high = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpHigh), _CMP_GT_OQ);
  const __m512 xc =
      _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpLow)), _mm512_set1_ps(kExpHigh));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpC[6]);
  for (int i = 5; i >= 0; --i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC[i]));
  const __m512i expo = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
  __m512 y = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), expo));
  y = _mm512_mask_mov_ps(y, too_low, _mm512_setzero_ps());
  y = _mm512_mask_mov_ps(y, too_high, _mm512_set1_ps(INFINITY));
  const __mmask16 is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(y, is_nan, x);
}

}  // namespace mantissa::kernels::detail
