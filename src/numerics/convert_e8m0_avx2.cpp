// E8M0 (OCP MX scales: 2^(field - 127), 0xFF NaN; no sign, no mantissa, no zero) 8 values at
// a time, lane for lane the codec's encode_e8m0 and decode (minifloat_codec.hpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "convert_kernels.hpp"
#include "lanes_avx2.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics::detail {
namespace {

// 8 float32 patterns u to E8M0 fields; `random` is used by stochastic rounding only.
inline V encode8_e8m0(V u, Rounding rounding, Overflow overflow, V random) {
  const V zero = _mm256_setzero_si256();
  // The field of the power of two at or below x (0 for float32 subnormals), and the dropped
  // fraction (x - lo) / lo as 32-bit fixed point: of 2^-127 for float32 subnormals.
  const V lo = _mm256_srli_epi32(u, 23);
  const V subnormal = _mm256_cmpgt_epi32(set1(0x00800000u), u);  // (negative lanes too)
  const V frac =
      _mm256_blendv_epi8(_mm256_slli_epi32(_mm256_and_si256(u, set1(0x7fffffu)), 9),
                         _mm256_slli_epi32(_mm256_sub_epi32(u, set1(0x00400000u)), 10), subnormal);
  V up = zero;
  if (rounding == Rounding::nearest_even) {
    up = _mm256_srai_epi32(frac, 31);  // from the midpoint 1.5 lo up
  } else if (rounding == Rounding::stochastic) {
    up = less_unsigned(_mm256_add_epi32(frac, random), frac);  // a carry out of 32 bits
  }
  V field = _mm256_sub_epi32(lo, up);  // up is 0 or -1
  const bool clamp = overflow == Overflow::saturate || rounding == Rounding::toward_zero;
  field = _mm256_blendv_epi8(field, set1(clamp ? 0xfeu : 0xffu),
                             _mm256_cmpgt_epi32(field, set1(0xfeu)));
  // Below 2^-127: 0x00 (no zero to round to). Zero, negative values and NaN: 0xFF. +inf:
  // 0xFF, or 0xFE (2^127) under saturate.
  field = _mm256_andnot_si256(_mm256_cmpgt_epi32(set1(0x00400000u), u), field);
  const V invalid =
      _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi32(u, zero), _mm256_cmpgt_epi32(zero, u)),
                      _mm256_cmpgt_epi32(u, set1(0x7f800000u)));
  field = _mm256_blendv_epi8(field, set1(0xffu), invalid);
  return _mm256_blendv_epi8(field, set1(overflow == Overflow::saturate ? 0xfeu : 0xffu),
                            _mm256_cmpeq_epi32(u, set1(0x7f800000u)));
}

}  // namespace

void encode_e8m0_avx2(const float* src, std::size_t n, std::uint8_t* dst, const EncodeArgs& args) {
  const EncodeArgs a = args;  // a local copy: stores to dst cannot alias it
  const std::uint32_t key = stochastic_key(a.seed, a.counter_high);
  const V key_v = set1(key);
  V counter = _mm256_add_epi32(set1(a.counter_low), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const bool stochastic = a.rounding == Rounding::stochastic;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V random = _mm256_setzero_si256();
    if (stochastic) {
      random = random8(counter, key_v);
      counter = _mm256_add_epi32(counter, set1(8));
    }
    const V u = _mm256_loadu_si256(reinterpret_cast<const V*>(src + i));
    store_packed(dst + i, encode8_e8m0(u, a.rounding, a.overflow, random), 1);
  }
  for (; i < n; ++i) {
    const std::uint32_t r =
        stochastic ? stochastic_bits_keyed(key, a.counter_low + static_cast<std::uint32_t>(i)) : 0u;
    dst[i] = static_cast<std::uint8_t>(encode_e8m0(src[i], a.rounding, a.overflow, r));
  }
}

void decode_e8m0_avx2(const std::uint8_t* src, std::size_t n, float* dst) {
  const Layout l = layout(Format::float8_e8m0);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V field = load_packed(src + i, 1);
    V out = _mm256_slli_epi32(field, 23);
    out = _mm256_blendv_epi8(out, set1(0x00400000u),  // field 0: 2^-127, a float32 subnormal
                             _mm256_cmpeq_epi32(field, _mm256_setzero_si256()));
    out = _mm256_blendv_epi8(out, set1(0x7fc00000u), _mm256_cmpeq_epi32(field, set1(0xffu)));
    _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), out);
  }
  for (; i < n; ++i) dst[i] = decode(src[i], l);
}

}  // namespace mantissa::numerics::detail
