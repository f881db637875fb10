// AVX2 + F16C conversion kernels. Compiled with -mavx2 -mf16c -mfma; called only when
// cpu_supports(SimdPath::avx2). Every lane computes exactly what minifloat_codec.hpp's
// encode/decode compute; encode and decode tails go through the scalar codec itself, rounding
// tails as a zero-padded group of 8.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "convert_kernels.hpp"
#include "lanes_avx2.hpp"
#include "mantissa/numerics/cbfloat16_avx2.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics::detail {
namespace {

// Per-call constants of the generic encoder.
struct EncodeConstants {
  V mantissa_bits, sign_shift, t_offset, drop_base, max_finite, overflow_value, inf_value;
  V nan_fn, infinity_bits, quiet_bit, payload_shift;
  bool ieee;

  explicit EncodeConstants(const EncodeArgs& a) {
    const Layout& l = a.layout;
    const int m = l.mantissa_bits;
    mantissa_bits = set1(static_cast<std::uint32_t>(m));
    sign_shift = set1(static_cast<std::uint32_t>(l.exponent_bits + m));
    t_offset = set1(static_cast<std::uint32_t>(l.bias - 127));
    drop_base = set1(static_cast<std::uint32_t>(23 - m));
    max_finite = set1(l.max_finite_bits());
    // What the codec returns for a finite magnitude past max (and for infinity in fn).
    // Layouts without NaN (fp6, fp4) always saturate, and give max for a NaN.
    const bool saturate = a.overflow == Overflow::saturate || !l.has_nan();
    const bool clamp = saturate || a.rounding == Rounding::toward_zero;
    overflow_value = set1(clamp ? l.max_finite_bits()
                                : (l.has_infinity() ? l.infinity_bits() : l.magnitude_mask()));
    inf_value = set1(l.has_infinity() ? l.infinity_bits()
                                      : (saturate ? l.max_finite_bits() : l.magnitude_mask()));
    nan_fn = set1(l.has_nan() ? l.magnitude_mask() : l.max_finite_bits());
    infinity_bits = set1(l.infinity_bits());
    quiet_bit = set1(1u << (m - 1));
    payload_shift = set1(static_cast<std::uint32_t>(23 - m));
    ieee = l.specials == Specials::ieee;
  }
};

// Encodes 8 floats (as bits) to the layout; `random` is used by stochastic rounding only.
inline V encode8(V u, const EncodeConstants& c, Rounding rounding, V random) {
  const V one = set1(1);
  const V sign = _mm256_sllv_epi32(_mm256_srli_epi32(u, 31), c.sign_shift);
  const V a = _mm256_and_si256(u, set1(0x7fffffffu));
  const V e32 = _mm256_srli_epi32(a, 23);
  const V sub32 = _mm256_cmpeq_epi32(e32, _mm256_setzero_si256());
  const V sig = _mm256_blendv_epi8(
      _mm256_or_si256(_mm256_and_si256(a, set1(0x7fffffu)), set1(0x800000u)), a, sub32);
  const V t = _mm256_add_epi32(_mm256_max_epi32(e32, one), c.t_offset);
  const V drop = _mm256_add_epi32(
      c.drop_base, _mm256_max_epi32(_mm256_sub_epi32(one, t), _mm256_setzero_si256()));
  V q = _mm256_srlv_epi32(sig, drop);  // 0 when drop > 31
  const V rest = _mm256_sub_epi32(sig, _mm256_sllv_epi32(q, drop));
  V up = _mm256_setzero_si256();
  if (rounding == Rounding::nearest_even) {
    const V half = _mm256_sllv_epi32(one, _mm256_sub_epi32(drop, one));
    const V gt = _mm256_cmpgt_epi32(rest, half);
    const V tie = _mm256_and_si256(_mm256_cmpeq_epi32(rest, half),
                                   _mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
    const V in_range = _mm256_cmpgt_epi32(set1(32), drop);
    up = _mm256_and_si256(_mm256_or_si256(gt, tie), in_range);
  } else if (rounding == Rounding::stochastic) {
    // Dropped fraction as 32-bit fixed point; out-of-range shift counts give 0 in AVX2.
    const V frac = _mm256_or_si256(_mm256_sllv_epi32(rest, _mm256_sub_epi32(set1(32), drop)),
                                   _mm256_srlv_epi32(sig, _mm256_sub_epi32(drop, set1(32))));
    up = less_unsigned(_mm256_add_epi32(frac, random), frac);
  }
  q = _mm256_sub_epi32(q, up);  // up is 0 or -1
  const V exp_part = _mm256_sllv_epi32(
      _mm256_max_epi32(_mm256_sub_epi32(t, one), _mm256_setzero_si256()), c.mantissa_bits);
  V mag = _mm256_add_epi32(exp_part, q);
  mag = _mm256_blendv_epi8(mag, c.overflow_value, _mm256_cmpgt_epi32(mag, c.max_finite));

  const V inf32 = set1(0x7f800000u);
  mag = _mm256_blendv_epi8(mag, c.inf_value, _mm256_cmpeq_epi32(a, inf32));
  const V nan_bits =
      c.ieee ? _mm256_or_si256(
                   _mm256_or_si256(c.infinity_bits, c.quiet_bit),
                   _mm256_srlv_epi32(_mm256_and_si256(a, set1(0x7fffffu)), c.payload_shift))
             : c.nan_fn;
  mag = _mm256_blendv_epi8(mag, nan_bits, _mm256_cmpgt_epi32(a, inf32));
  return _mm256_or_si256(sign, mag);
}

// The fields of a format with m mantissa bits and bias b for the lanes `small` of magnitudes
// `mag` below its smallest normal (zero included); the other lanes keep `field`. |x| x
// 2^(b - 1 + m) (`scale`; exact) rounded to an integer (nearest-even or toward zero) is the
// subnormal's field, and a round-up to 2^m is the smallest normal's pattern. A float32
// subnormal |x| gives 0 with or without DAZ, and no product is a float32 subnormal.
inline V subnormal_fields(V field, V mag, V small, __m256 scale, bool nearest) {
  const __m256 scaled = _mm256_mul_ps(_mm256_castsi256_ps(mag), scale);
  const __m256 whole = nearest
                           ? _mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                           : _mm256_round_ps(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  return _mm256_blendv_epi8(field, _mm256_cvttps_epi32(whole), small);
}

// 2^(b - 1 + m) where it is a float32 value, else 0 (never used then; computing it would
// raise the overflow flag).
inline float subnormal_scale(const Layout& l) {
  const int e = l.bias - 1 + l.mantissa_bits;
  return e <= 126 ? std::ldexp(1.0f, e) : 0.0f;
}

// Groups of 8 lanes of magnitude at most max_finite encode in float32 bit arithmetic: those
// from min_normal up round the dropped mantissa bits (nearest-even, or toward zero), then
// rebias the exponent field; those below it are subnormal_fields (where 2^(b - 1 + m) is a
// float32 value: every format here but bfloat16, which has its own path). Results are the
// codec's patterns; other groups (overflow, infinity, NaN) take encode8.
struct InRangeEncoder {
  V lo, hi, abs_mask, half_minus_one, keep, one, rebias;
  __m256 sub_scale;
  int shift;
  bool nearest, subnormals;
  InRangeEncoder(const EncodeArgs& a, float min_normal, float max_finite)
      : lo(set1(std::bit_cast<std::uint32_t>(min_normal))),
        hi(set1(std::bit_cast<std::uint32_t>(max_finite))),
        abs_mask(set1(0x7fffffffu)),
        half_minus_one(set1((1u << (22 - a.layout.mantissa_bits)) - 1u)),
        keep(set1(~((1u << (23 - a.layout.mantissa_bits)) - 1u))),
        one(set1(1u)),
        rebias(set1(static_cast<std::uint32_t>(127 - a.layout.bias) << a.layout.mantissa_bits)),
        sub_scale(_mm256_set1_ps(subnormal_scale(a.layout))),
        shift(23 - a.layout.mantissa_bits),
        nearest(a.rounding == Rounding::nearest_even),
        subnormals(a.layout.bias - 1 + a.layout.mantissa_bits <= 126) {}
  // Encodes u into *out and returns true when every lane is in the fast range.
  bool encode(V u, int sign_shift, V* out) const {
    const V mag = _mm256_and_si256(u, abs_mask);
    const V small = _mm256_cmpgt_epi32(lo, mag);  // zero included
    V bad = _mm256_cmpgt_epi32(mag, hi);
    if (!subnormals) {
      bad = _mm256_or_si256(
          bad, _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, _mm256_setzero_si256()), small));
    }
    if (!_mm256_testz_si256(bad, bad)) return false;
    V r = mag;
    if (nearest) {
      const V lsb = _mm256_and_si256(_mm256_srli_epi32(mag, shift), one);
      r = _mm256_add_epi32(mag, _mm256_add_epi32(half_minus_one, lsb));
    }
    r = _mm256_and_si256(r, keep);
    V field = _mm256_sub_epi32(_mm256_srli_epi32(r, shift), rebias);
    if (!_mm256_testz_si256(small, small)) {
      field = subnormals ? subnormal_fields(field, mag, small, sub_scale, nearest)
                         : _mm256_andnot_si256(small, field);  // (only zeros are small here)
    }
    const V sign = _mm256_slli_epi32(_mm256_srli_epi32(u, 31), sign_shift);
    *out = _mm256_or_si256(sign, field);
    return true;
  }
};

void encode_generic(const float* src, std::size_t n, void* dst, const EncodeArgs& args) {
  const EncodeArgs a = args;  // a local copy: stores to dst cannot alias it
  const EncodeConstants c(a);
  auto* out = static_cast<std::uint8_t*>(dst);
  const std::uint32_t key = stochastic_key(a.seed, a.counter_high);
  const V key_v = set1(key);
  V counter = _mm256_add_epi32(set1(a.counter_low), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  std::size_t i = 0;
  const bool fast = a.rounding != Rounding::stochastic;
  const FormatTraits* t = nullptr;
  for (const FormatTraits& f : kFormatTable) {
    if (f.layout.exponent_bits == a.layout.exponent_bits &&
        f.layout.mantissa_bits == a.layout.mantissa_bits && f.layout.bias == a.layout.bias)
      t = &f;
  }
  const InRangeEncoder fast_path(a, t ? static_cast<float>(t->min_normal) : 1.0f,
                                 t ? static_cast<float>(t->max) : 0.0f);
  const int sign_shift = a.layout.exponent_bits + a.layout.mantissa_bits;
  for (; i + 8 <= n; i += 8) {
    const V u = _mm256_loadu_si256(reinterpret_cast<const V*>(src + i));
    V packed;
    if (fast && t != nullptr && fast_path.encode(u, sign_shift, &packed)) {
      store_packed(out + i * a.storage_bytes, packed, a.storage_bytes);
      continue;
    }
    V random = _mm256_setzero_si256();
    if (a.rounding == Rounding::stochastic) {
      random = random8(counter, key_v);
      counter = _mm256_add_epi32(counter, set1(8));
    }
    store_packed(out + i * a.storage_bytes, encode8(u, c, a.rounding, random), a.storage_bytes);
  }
  for (; i < n; ++i) {
    const std::uint32_t r =
        a.rounding == Rounding::stochastic
            ? stochastic_bits_keyed(key, a.counter_low + static_cast<std::uint32_t>(i))
            : 0u;
    const std::uint32_t bits = encode(src[i], a.layout, a.rounding, a.overflow, r);
    std::memcpy(out + i * a.storage_bytes, &bits, static_cast<std::size_t>(a.storage_bytes));
  }
}

// bfloat16, nearest-even or toward zero, overflow to infinity: integer rounding on the top
// half of the float32 pattern, NaN quieted with its payload's top bits. streaming:
// non-temporal stores from dst's first 32-byte boundary on.
void encode_bfloat16(const float* src, std::size_t n, std::uint16_t* dst, Rounding rounding,
                     bool streaming) {
  const bool nearest = rounding == Rounding::nearest_even;
  const V inf32 = set1(0x7f800000u);
  const Layout l = layout(Format::bfloat16);
  const auto one = [&](std::size_t j) {
    dst[j] = static_cast<std::uint16_t>(encode(src[j], l, rounding, Overflow::to_infinity));
  };
  const auto narrow = [&](std::size_t j) {  // 16 values
    V r[2];
    for (int h = 0; h < 2; ++h) {
      const V u = _mm256_loadu_si256(reinterpret_cast<const V*>(src + j + 8 * h));
      V rounded = u;
      if (nearest) {
        const V lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), set1(1));
        rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, set1(0x7fffu)));
      }
      rounded = _mm256_srli_epi32(rounded, 16);
      const V is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, set1(0x7fffffffu)), inf32);
      const V quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), set1(0x40u));
      r[h] = _mm256_blendv_epi8(rounded, quiet, is_nan);
    }
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xd8);
  };
  std::size_t i = 0;
  if (streaming) {
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 32 != 0; ++i) one(i);
    for (; i + 16 <= n; i += 16) _mm256_stream_si256(reinterpret_cast<V*>(dst + i), narrow(i));
    _mm_sfence();
  }
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), narrow(i));
  for (; i < n; ++i) one(i);
}

// cbfloat16 (1/6/9, bias 31), nearest-even or toward zero: 16 values at a time whose
// magnitudes are at most max finite. Those in the normal range [2^-30, max] round with integer
// arithmetic on the float32 pattern (a round-up's carry moves into the exponent, and max
// finite rounds to itself); those below it are subnormal_fields (x 2^39). A group with
// anything else (overflow, infinity, NaN) goes through the generic encoder.
void encode_cbfloat16(const float* src, std::size_t n, std::uint16_t* dst, const EncodeArgs& a) {
  const bool nearest = a.rounding == Rounding::nearest_even;
  const V lo = set1(0x30800000u);  // 2^-30, the smallest normal
  const V hi = set1(0x4f7fc000u);  // (2 - 2^-9) * 2^31, the largest finite
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V r[2];
    V bad = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const V u = _mm256_loadu_si256(reinterpret_cast<const V*>(src + i + 8 * h));
      const V mag = _mm256_and_si256(u, set1(0x7fffffffu));
      const V small = _mm256_cmpgt_epi32(lo, mag);  // zero included
      bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(mag, hi));
      V rounded = mag;
      if (nearest) {
        const V lsb = _mm256_and_si256(_mm256_srli_epi32(mag, 14), set1(1u));
        rounded = _mm256_add_epi32(mag, _mm256_add_epi32(lsb, set1(0x1fffu)));
      }
      V field = _mm256_sub_epi32(_mm256_srli_epi32(rounded, 14), set1(96u << 9));
      if (!_mm256_testz_si256(small, small)) {
        field = subnormal_fields(field, mag, small, _mm256_set1_ps(0x1p39f), nearest);
      }
      r[h] = _mm256_or_si256(field, _mm256_slli_epi32(_mm256_srli_epi32(u, 31), 15));
    }
    if (!_mm256_testz_si256(bad, bad)) {
      // Out-of-range values go to the generic encoder a block at a time, so that its per-call
      // setup is paid once per 256 values rather than per 16 (e.g. arrays of tiny values).
      const std::size_t m = std::min<std::size_t>(256, n - i);
      encode_generic(src + i, m, dst + i, a);
      i += m - 16;  // the loop adds the other 16
      continue;
    }
    const V packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), packed);
  }
  if (i < n) encode_generic(src + i, n - i, dst + i, a);
}

// float16 through F16C: nearest-even or toward zero, overflow to infinity.
void encode_float16(const float* src, std::size_t n, std::uint16_t* dst, Rounding rounding) {
  std::size_t i = 0;
  if (rounding == Rounding::nearest_even) {
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
  } else {
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_ZERO);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
  }
  const Layout l = layout(Format::float16);
  for (; i < n; ++i) {
    dst[i] = static_cast<std::uint16_t>(encode(src[i], l, rounding, Overflow::to_infinity));
  }
}

// Per-call constants of the generic decoder, hoisted out of the loop.
struct DecodeConstants {
  V mantissa_mask, exponent_mask, rebias, sub_scale;
  int m, sign_shift;
  bool ieee, fn, float32_subnormals;

  explicit DecodeConstants(const Layout& l) {
    m = l.mantissa_bits;
    sign_shift = l.exponent_bits + l.mantissa_bits;
    mantissa_mask = set1(l.mantissa_mask());
    exponent_mask = set1(l.exponent_mask());
    rebias = set1(static_cast<std::uint32_t>(127 - l.bias));
    sub_scale = _mm256_castps_si256(_mm256_set1_ps(decode(1u, l)));
    ieee = l.specials == Specials::ieee;
    fn = l.specials == Specials::fn_nan;
    // With float32's bias, subnormals are float32 subnormals with the same fields.
    float32_subnormals = l.bias == 127;
  }
};

// Generic decode of 8 lanes of bit patterns.
inline V decode8(V b, const DecodeConstants& c) {
  const V zero = _mm256_setzero_si256();
  const V mant = _mm256_and_si256(b, c.mantissa_mask);
  const V e = _mm256_and_si256(_mm256_srli_epi32(b, c.m), c.exponent_mask);
  const V sign = _mm256_slli_epi32(_mm256_srli_epi32(b, c.sign_shift), 31);
  const V mant_hi = _mm256_slli_epi32(mant, 23 - c.m);
  V out = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(e, c.rebias), 23), mant_hi);
  // Subnormals (and zero): mantissa * 2^(1 - bias - m); unless they are float32 subnormals
  // (built by the line above), a float32 normal computed exactly by one multiply.
  if (!c.float32_subnormals) {
    const V sub = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_cvtepi32_ps(mant), _mm256_castsi256_ps(c.sub_scale)));
    out = _mm256_blendv_epi8(out, sub, _mm256_cmpeq_epi32(e, zero));
  }
  const V top = _mm256_cmpeq_epi32(e, c.exponent_mask);
  const V nan = _mm256_or_si256(set1(0x7fc00000u), mant_hi);
  if (c.ieee) {
    const V special = _mm256_blendv_epi8(nan, set1(0x7f800000u), _mm256_cmpeq_epi32(mant, zero));
    out = _mm256_blendv_epi8(out, special, top);
  } else if (c.fn) {  // Specials::none has no NaN: the top exponent holds normal numbers
    const V is_nan = _mm256_and_si256(top, _mm256_cmpeq_epi32(mant, c.mantissa_mask));
    out = _mm256_blendv_epi8(out, nan, is_nan);
  }
  return _mm256_or_si256(out, sign);
}

}  // namespace

void encode_avx2(const float* src, std::size_t n, void* dst, const EncodeArgs& a) {
  const bool fast_rounding =
      a.rounding == Rounding::nearest_even || a.rounding == Rounding::toward_zero;
  if (fast_rounding && a.overflow == Overflow::to_infinity) {
    if (a.layout.exponent_bits == 8 && a.layout.mantissa_bits == 7) {
      encode_bfloat16(src, n, static_cast<std::uint16_t*>(dst), a.rounding, a.streaming);
      return;
    }
    if (a.layout.exponent_bits == 5 && a.layout.mantissa_bits == 10) {
      encode_float16(src, n, static_cast<std::uint16_t*>(dst), a.rounding);
      return;
    }
  }
  if (fast_rounding && a.layout.exponent_bits == 6 && a.layout.mantissa_bits == 9 &&
      a.layout.bias == 31) {
    encode_cbfloat16(src, n, static_cast<std::uint16_t*>(dst), a);
    return;
  }
  encode_generic(src, n, dst, a);
}

void round_float16_avx2(float* x, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {  // the last values as a group of 8, zeros after them (short rows are common)
    alignas(32) float last[8] = {};
    std::memcpy(last, x + i, (n - i) * sizeof(float));
    _mm256_store_ps(
        last, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_load_ps(last), _MM_FROUND_TO_NEAREST_INT)));
    std::memcpy(x + i, last, (n - i) * sizeof(float));
  }
}

void round_nearest_avx2(float* x, std::size_t n, const Layout& layout_ref, Overflow overflow,
                        float min_normal, float max_finite) {
  const Layout l = layout_ref;
  const auto shift = static_cast<std::uint32_t>(23 - l.mantissa_bits);
  // |x| of binade 2^e rounds to the format's spacing there, nearest-even, in one add and one
  // subtract of c = max(2^(e + shift), 2^(emin + shift)): the sum's float32 ulp is the
  // format's spacing 2^(e - m) for a normal result and 2^(emin - m) below the smallest normal
  // (zero and float32 subnormals included), and a carry into the next binade is exact. Taken
  // up to max finite (nothing there rounds above it), and below 2^(127 - shift) so that c stays
  // finite (bfloat16's top binades are beyond).
  const V exponent = set1(0x7f800000u);
  const V shift_bits = set1(shift << 23);
  const V magic = set1(std::bit_cast<std::uint32_t>(min_normal) + (shift << 23));
  const V sign = set1(0x80000000u);
  const V abs_mask = set1(0x7fffffffu);
  const V limit =
      set1(std::min(std::bit_cast<std::uint32_t>(max_finite), ((254u - shift) << 23) - 1u));
  // Groups with a lane above that (overflow, infinity, NaN, bfloat16's top binades) or a
  // float32 subnormal: the
  // codec's vector encode and decode, which give the scalar codec's bits (both are tested
  // against it exhaustively); their constants made at the first such group.
  std::optional<EncodeConstants> encode_c;
  std::optional<DecodeConstants> decode_c;
  const auto group = [&](float* p) {
    const V u = _mm256_loadu_si256(reinterpret_cast<const V*>(p));
    const V mag = _mm256_and_si256(u, abs_mask);
    // Magnitudes compare as integers (positive floats order like their bits); NaN and inf
    // are above every limit.
    // float32 subnormals (nonzero below 2^-126) too, so that the float arithmetic below never
    // meets one and the result does not depend on the FTZ/DAZ flags.
    const V tiny = _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, _mm256_setzero_si256()),
                                       _mm256_cmpgt_epi32(set1(0x00800000u), mag));
    const V above = _mm256_or_si256(_mm256_cmpgt_epi32(mag, limit), tiny);
    if (!_mm256_testz_si256(above, above)) {
      if (!encode_c) {
        EncodeArgs args{};
        args.layout = l;
        args.rounding = Rounding::nearest_even;
        args.overflow = overflow;
        args.storage_bytes = 4;
        encode_c.emplace(args);
        decode_c.emplace(l);
      }
      const V bits = encode8(u, *encode_c, Rounding::nearest_even, _mm256_setzero_si256());
      _mm256_storeu_si256(reinterpret_cast<V*>(p), decode8(bits, *decode_c));
      return;
    }
    const __m256 c = _mm256_castsi256_ps(
        _mm256_max_epi32(_mm256_add_epi32(_mm256_and_si256(mag, exponent), shift_bits), magic));
    const __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_castsi256_ps(mag), c), c);
    _mm256_storeu_si256(reinterpret_cast<V*>(p),
                        _mm256_or_si256(_mm256_castps_si256(r), _mm256_and_si256(u, sign)));
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) group(x + i);
  if (i < n) {  // the last values as a group of 8, zeros after them (short rows are common)
    alignas(32) float last[8] = {};
    std::memcpy(last, x + i, (n - i) * sizeof(float));
    group(last);
    std::memcpy(x + i, last, (n - i) * sizeof(float));
  }
}

void decode_avx2(const void* src, std::size_t n, const Layout& layout_ref, int storage_bytes,
                 float* dst, bool streaming) {
  const Layout l = layout_ref;  // a local copy: stores to dst cannot alias it
  const DecodeConstants c(l);
  const auto* in = static_cast<const std::uint8_t*>(src);
  std::size_t i = 0;
  const bool f16 = l.exponent_bits == 5 && l.mantissa_bits == 10;
  const bool bf16 = l.exponent_bits == 8 && l.mantissa_bits == 7;
  if (bf16) {  // the top half of a float32: shift, and quiet NaNs
    const V inf32 = set1(0x7f800000u);
    const auto wide = [&](std::size_t j) {
      const V u = _mm256_slli_epi32(load_packed(in + j * 2, 2), 16);
      const V is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, set1(0x7fffffffu)), inf32);
      return _mm256_or_si256(u, _mm256_and_si256(is_nan, set1(0x00400000u)));
    };
    if (streaming) {  // up to dst's first 32-byte boundary one at a time, then whole vectors
      for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 32 != 0; ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, in + i * 2, 2);
        dst[i] = decode(bits, l);
      }
      for (; i + 8 <= n; i += 8) _mm256_stream_si256(reinterpret_cast<V*>(dst + i), wide(i));
      _mm_sfence();
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), wide(i));
  }
  if (l.exponent_bits == 6 && l.mantissa_bits == 9 && l.bias == 31) {
    // cbfloat16: avx2::cbfloat16_magnitudes8 (normal numbers rebiased in integers,
    // subnormals and zero by an exact conversion), the sign put back. Groups with an infinity
    // or NaN go the generic way.
    for (; i + 8 <= n; i += 8) {
      const V b = load_packed(in + i * 2, 2);
      const V mag = _mm256_and_si256(b, set1(0x7fffu));
      const V top = _mm256_cmpgt_epi32(mag, set1((63u << 9) - 1));
      V out;
      if (_mm256_testz_si256(top, top)) {
        out = _mm256_or_si256(avx2::cbfloat16_magnitudes8(mag),
                              _mm256_slli_epi32(_mm256_srli_epi32(b, 15), 31));
      } else {
        out = decode8(b, c);
      }
      _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), out);
    }
  }
  // Groups whose exponent fields are all in [1, top - 1] are normal numbers (in either
  // specials policy): move the fields into float32's and rebias.
  const V field_one = set1(1u << l.mantissa_bits);
  const V top_field = set1(l.exponent_mask() << l.mantissa_bits);
  const V magnitude = set1(l.magnitude_mask());
  const V rebias = set1(static_cast<std::uint32_t>(127 - l.bias) << 23);
  const int sign_shift = l.exponent_bits + l.mantissa_bits;
  for (; i + 8 <= n; i += 8) {
    const void* p = in + i * storage_bytes;
    if (f16) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))));
      continue;
    }
    const V b = load_packed(p, storage_bytes);
    const V mag = _mm256_and_si256(b, magnitude);
    // Special when the field is 0 (subnormal) or the top one (inf, NaN, fn's top); zeros stay
    // signed zeros on the fast path.
    const V zero = _mm256_cmpeq_epi32(mag, _mm256_setzero_si256());
    const V special = _mm256_andnot_si256(
        zero, _mm256_or_si256(_mm256_cmpgt_epi32(field_one, mag),
                              _mm256_cmpgt_epi32(mag, _mm256_sub_epi32(top_field, set1(1)))));
    if (_mm256_testz_si256(special, special)) {
      const V field = _mm256_andnot_si256(
          zero, _mm256_add_epi32(_mm256_slli_epi32(mag, 23 - l.mantissa_bits), rebias));
      const V out = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(b, sign_shift), 31), field);
      _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), out);
    } else {
      _mm256_storeu_si256(reinterpret_cast<V*>(dst + i), decode8(b, c));
    }
  }
  for (; i < n; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, in + i * storage_bytes, static_cast<std::size_t>(storage_bytes));
    dst[i] = decode(bits, l);
  }
}

}  // namespace mantissa::numerics::detail
