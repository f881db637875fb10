// bfloat16 encode by AVX512-BF16's conversion instruction: compiled with -mavx512f -mavx512bw
// -mavx512bf16, entered only where the CPU has AVX512-BF16 (convert_avx512.cpp).
#include <immintrin.h>

#include <cstdint>

#include "bf16_encode_avx512.hpp"
#include "convert_kernels.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::numerics::detail {
namespace {

// The same, nearest even, by AVX512-BF16's conversion instruction (VCVTNE2PS2BF16: nearest
// even, NaN quieted as bf16_halves does, a float32 subnormal flushed to zero), but by the
// integers when one of the 32 is subnormal. Runs only where the CPU has AVX512-BF16.
struct NarrowByUnit {
  __m512i operator()(const float* s) const {
    const __m512 a = _mm512_loadu_ps(s), b = _mm512_loadu_ps(s + 16);
    const __m512i exponent = _mm512_set1_epi32(0x7F800000),
                  fraction = _mm512_set1_epi32(0x007FFFFF);
    const __mmask16 sa =
        _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(_mm512_castps_si512(a), exponent),
                                    _mm512_castps_si512(a), fraction);
    const __mmask16 sb =
        _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(_mm512_castps_si512(b), exponent),
                                    _mm512_castps_si512(b), fraction);
    if ((sa | sb) != 0) return narrow_by_integers(s, true);
    return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));  // a in the low half
  }
};

}  // namespace

void encode_bfloat16_by_unit_avx512(const float* src, std::size_t n, std::uint16_t* dst,
                                    bool streaming) {
  encode_bfloat16_with(src, n, dst, Rounding::nearest_even, streaming, NarrowByUnit());
}

}  // namespace mantissa::numerics::detail
