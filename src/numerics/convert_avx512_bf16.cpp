// bfloat16 encode by AVX512-BF16's conversion instruction: compiled with -mavx512f -mavx512bw
// -mavx512bf16, entered only where the CPU has AVX512-BF16 (convert_avx512.cpp).
#include <immintrin.h>

#include <cstdint>

#include "bf16_encode_avx512.hpp"
#include "convert_kernels.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::numerics::detail {
namespace {

// 32 values, nearest even, by AVX512-BF16's VCVTNE2PS2BF16, but by the integers when one of
// them is subnormal (avx512::any_subnormal). Runs only where the CPU has AVX512-BF16.
struct NarrowByUnit {
  __m512i operator()(const float* s) const {
    const __m512 a = _mm512_loadu_ps(s), b = _mm512_loadu_ps(s + 16);
    if (avx512::any_subnormal(_mm512_castps_si512(a)) ||
        avx512::any_subnormal(_mm512_castps_si512(b))) {
      return narrow_by_integers(s, true);
    }
    return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));  // a in the low half
  }
};

}  // namespace

void encode_bfloat16_by_unit_avx512(const float* src, std::size_t n, std::uint16_t* dst,
                                    bool streaming) {
  encode_bfloat16_with(src, n, dst, Rounding::nearest_even, streaming, NarrowByUnit());
}

}  // namespace mantissa::numerics::detail
