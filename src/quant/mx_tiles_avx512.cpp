// Compiled with -mavx512f -mavx512bw; entered only when numerics::active_simd_path() is avx512
// (block_bands.cpp). MX over bfloat16 or float32 in one pass: the E8M0 fields, multipliers
// and thresholds of 16 row tiles or a strip of column tiles are found in registers right
// after their amaxes, and the same elements are rounded while they are in the L1 cache, by
// the band passes' own bodies (band_passes_avx512.hpp). The band path (block_bands_avx512.cpp)
// finds the same numbers through arrays, a tile group at a time, in separate passes.
#include <immintrin.h>

#include <limits>

#include "band_passes_avx512.hpp"
#include "block_bands_avx512.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::quant::detail {
namespace {

using namespace band_passes;

inline __m512i set1(std::uint32_t v) {
  return _mm512_set1_epi32(static_cast<int>(v));
}

// numerics::mx_scale_fields (block_scales.cpp) on 16 lanes of amax magnitude bits u, bit for
// bit: the rule's exponent clamped to -127..127 plus 127; 0 for amax 0, 0xfe for an
// infinity, 0xff for a NaN.
template <MxRule kRule>
inline __m512i fields16(__m512i u, const MxTiles& mx, int mantissa_bits) {
  const __m512i one = set1(1);
  __m512i field;
  if constexpr (kRule == MxRule::rceil) {
    // amax times the float32 reciprocal of max; any mantissa bit rounds the exponent up (a
    // float32 subnormal up to 2^-127 gives 2^-127).
    const __m512i q = _mm512_castps_si512(
        _mm512_mul_ps(_mm512_castsi512_ps(u), _mm512_set1_ps(mx.reciprocal_max)));
    const __m512i f = _mm512_srli_epi32(q, 23);
    const __m512i mantissa = _mm512_and_si512(q, set1(0x7fffff));
    const __mmask16 up =
        _mm512_test_epi32_mask(mantissa, mantissa) & _mm512_cmpneq_epi32_mask(f, set1(0xfe)) &
        static_cast<__mmask16>(~(_mm512_cmpeq_epi32_mask(f, _mm512_setzero_si512()) &
                                 _mm512_cmple_epu32_mask(mantissa, set1(0x400000))));
    field = _mm512_min_epu32(_mm512_mask_add_epi32(f, up, f, one), set1(0xfe));
  } else {
    const __mmask16 normal = _mm512_cmpge_epu32_mask(u, set1(0x00800000));
    // floor(log2(amax)): a normal's exponent; a subnormal's from its integer value as a float
    // (exact: below 2^23).
    const __m512i floor_log2 = _mm512_mask_blend_epi32(
        normal,
        _mm512_sub_epi32(_mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepu32_ps(u)), 23),
                         set1(127 + 149)),
        _mm512_sub_epi32(_mm512_srli_epi32(u, 23), set1(127)));
    __m512i e;
    if constexpr (kRule == MxRule::floor) {
      e = floor_log2;
    } else if constexpr (kRule == MxRule::ceil) {
      const __mmask16 exact =
          (normal & _mm512_testn_epi32_mask(u, set1(0x7fffff))) |
          (static_cast<__mmask16>(~normal) & _mm512_testn_epi32_mask(u, _mm512_sub_epi32(u, one)));
      e = _mm512_mask_add_epi32(floor_log2, static_cast<__mmask16>(~exact), floor_log2, one);
    } else {
      // Half an element ulp added to the float32 bits, the mantissa dropped (ties away; a
      // carry moves to the next binade).
      const __m512i rounded = _mm512_add_epi32(u, set1(1u << (22 - mantissa_bits)));
      e = _mm512_mask_blend_epi32(_mm512_cmpge_epu32_mask(rounded, set1(0x00800000)),
                                  set1(static_cast<std::uint32_t>(-127)),
                                  _mm512_sub_epi32(_mm512_srli_epi32(rounded, 23), set1(127)));
    }
    e = _mm512_sub_epi32(e, set1(static_cast<std::uint32_t>(mx.emax)));
    e = _mm512_min_epi32(_mm512_max_epi32(e, set1(static_cast<std::uint32_t>(-127))), set1(127));
    field = _mm512_add_epi32(e, set1(127));
  }
  field = _mm512_mask_mov_epi32(field, _mm512_cmpeq_epi32_mask(u, _mm512_setzero_si512()),
                                _mm512_setzero_si512());
  field = _mm512_mask_mov_epi32(field, _mm512_cmpeq_epi32_mask(u, set1(0x7f800000)), set1(0xfe));
  return _mm512_mask_mov_epi32(field, _mm512_cmpgt_epu32_mask(u, set1(0x7f800000)), set1(0xff));
}

// 16 tiles' multipliers and thresholds from their amaxes u and fields f, as block_bands.cpp's
// mx_multipliers and ScaleArrays::thresholds find them: the bfloat16 forms in 32-bit lanes.
struct TileVectors {
  Tile16 t;
  __m512i lo16, top16, offset16;
};

inline TileVectors tile_vectors(__m512i u, __m512i f, const BandGrid& g) {
  const __mmask16 nan = _mm512_cmpeq_epi32_mask(f, set1(0xff));
  __m512i db = _mm512_mask_mov_epi32(_mm512_slli_epi32(f, 23),
                                     _mm512_cmpeq_epi32_mask(f, _mm512_setzero_si512()),
                                     set1(0x00400000));  // 2^-127, a float32 subnormal
  db = _mm512_mask_mov_epi32(db, nan, set1(0x7fc00000));
  __m512i eb = _mm512_mask_mov_epi32(_mm512_slli_epi32(_mm512_sub_epi32(set1(254), f), 23),
                                     _mm512_cmpeq_epi32_mask(f, set1(254)), set1(0x00400000));
  eb = _mm512_maskz_mov_epi32(static_cast<__mmask16>(~nan), eb);
  TileVectors v;
  v.t.enc = _mm512_castsi512_ps(eb);
  v.t.dec = _mm512_castsi512_ps(db);
  // Plain: a power of two within 2^-100..2^100 and a finite amax.
  const __mmask16 plain = _mm512_cmpge_epu32_mask(db, set1(0x0d800000)) &
                          _mm512_cmple_epu32_mask(db, set1(0x71800000)) &
                          _mm512_testn_epi32_mask(db, set1(0x7fffff)) &
                          _mm512_cmplt_epu32_mask(u, set1(0x7f800000));
  v.t.lo = _mm512_mask_mul_ps(_mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()), plain,
                              _mm512_set1_ps(g.min_normal), v.t.dec);
  v.t.magic = _mm512_mul_ps(_mm512_set1_ps(g.subnormal_magic), v.t.dec);
  v.t.top = _mm512_mul_ps(_mm512_set1_ps(g.max), v.t.dec);
  v.lo16 = _mm512_mask_srli_epi32(set1(0xffff), plain, _mm512_castps_si512(v.t.lo), 16);
  v.top16 = _mm512_srli_epi32(_mm512_castps_si512(v.t.top), 16);
  v.offset16 = _mm512_and_si512(
      _mm512_sll_epi32(
          _mm512_sub_epi32(_mm512_srli_epi32(db, 23), set1(static_cast<std::uint32_t>(g.bias))),
          _mm_cvtsi32_si128(g.mantissa_bits)),
      set1(0xffff));
  return v;
}

// Lane j of v in every lane.
inline __m512 lane(__m512 v, int j) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(j), v);
}

// 1 x 32 tiles: rows [r0, r1) are one run of whole tiles, sixteen at a time.
template <MxRule kRule, class Fast, class Half>
bool each_row_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                   std::uint8_t* scale_codes, Fast&& fast, Half&& half) {
  const auto* x = static_cast<const std::uint16_t*>(in.x);
  const std::int64_t begin = in.r0 * in.cols, tiles = (in.r1 - in.r0) * in.cols / 32;
  const __m512i abs_mask = _mm512_set1_epi16(0x7fff);
  for (std::int64_t t0 = 0; t0 < tiles; t0 += 16) {
    const int n = tiles - t0 < 16 ? static_cast<int>(tiles - t0) : 16;
    const std::int64_t base = begin + t0 * 32;  // the first element, as row 0's column
    __m512i v[16];
    for (int j = 0; j < 16; ++j) {
      v[j] = j < n ? _mm512_and_si512(_mm512_loadu_si512(x + base + 32 * j), abs_mask)
                   : _mm512_setzero_si512();
    }
    const __m512i u = _mm512_slli_epi32(tile_maxima16(v), 16);
    const __mmask16 lanes = lanes_below(n);
    if (_mm512_mask_cmpge_epu32_mask(lanes, u, set1(0x7f800000)) != 0) return false;
    const __m512i f = fields16<kRule>(u, mx, g.mantissa_bits);
    if (scale_codes != nullptr) _mm512_mask_cvtepi32_storeu_epi8(scale_codes + base / 32, lanes, f);
    const TileVectors tv = tile_vectors(u, f, g);
    alignas(32) std::uint16_t lo16[16], top16[16], offset16[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lo16), _mm512_cvtepi32_epi16(tv.lo16));
    _mm256_store_si256(reinterpret_cast<__m256i*>(top16), _mm512_cvtepi32_epi16(tv.top16));
    _mm256_store_si256(reinterpret_cast<__m256i*>(offset16), _mm512_cvtepi32_epi16(tv.offset16));
    for (int j = 0; j < n; ++j) {
      const std::int64_t c = base + 32 * j;
      if (!fast(0, c, ~__mmask32{0}, _mm512_set1_epi16(static_cast<short>(lo16[j])),
                _mm512_set1_epi16(static_cast<short>(top16[j])),
                _mm512_set1_epi16(static_cast<short>(offset16[j])))) {
        const Tile16 t{lane(tv.t.enc, j), lane(tv.t.dec, j), lane(tv.t.lo, j), lane(tv.t.magic, j),
                       lane(tv.t.top, j)};
        half(0, c, 0xffff, t);
        half(0, c + 16, 0xffff, t);
      }
    }
  }
  return true;
}

// Two vectors of 16 values in 32-bit lanes as one of 32 16-bit lanes.
inline __m512i join16(__m512i a, __m512i b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(a)),
                            _mm512_cvtepi32_epi16(b), 1);
}

// 32 x 1 tiles: each band of 32 rows in strips of 32 columns, the strip's amaxes over the
// band's rows, then its rows rounded.
template <MxRule kRule, class Fast, class Half>
bool each_column_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                      std::uint8_t* scale_codes, Fast&& fast, Half&& half) {
  const auto* x = static_cast<const std::uint16_t*>(in.x);
  const std::int64_t cols = in.cols;
  const __m512i abs_mask = _mm512_set1_epi16(0x7fff);
  for (std::int64_t b0 = in.r0; b0 < in.r1; b0 += 32) {
    const std::int64_t b1 = b0 + 32 < in.r1 ? b0 + 32 : in.r1;
    for (std::int64_t c = 0; c < cols; c += 32) {
      const std::int64_t n = cols - c < 32 ? cols - c : 32;
      const __mmask32 m = lanes32_below(n);
      __m512i acc = _mm512_setzero_si512();
      for (std::int64_t r = b0; r < b1; ++r) {
        acc = _mm512_max_epu16(
            acc, _mm512_and_si512(_mm512_maskz_loadu_epi16(m, x + r * cols + c), abs_mask));
      }
      const __m512i u0 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(acc)), 16);
      const __m512i u1 =
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(acc, 1)), 16);
      if ((_mm512_cmpge_epu32_mask(u0, set1(0x7f800000)) |
           _mm512_cmpge_epu32_mask(u1, set1(0x7f800000))) != 0) {
        return false;
      }
      const __m512i f0 = fields16<kRule>(u0, mx, g.mantissa_bits);
      const __m512i f1 = fields16<kRule>(u1, mx, g.mantissa_bits);
      const __mmask16 m0 = lanes_below(n), m1 = n > 16 ? lanes_below(n - 16) : __mmask16{0};
      if (scale_codes != nullptr) {
        std::uint8_t* s = scale_codes + b0 / 32 * cols + c;
        _mm512_mask_cvtepi32_storeu_epi8(s, m0, f0);
        if (n > 16) _mm512_mask_cvtepi32_storeu_epi8(s + 16, m1, f1);
      }
      const TileVectors t0 = tile_vectors(u0, f0, g), t1 = tile_vectors(u1, f1, g);
      const __m512i lo = join16(t0.lo16, t1.lo16), top = join16(t0.top16, t1.top16),
                    offset = join16(t0.offset16, t1.offset16);
      for (std::int64_t r = b0; r < b1; ++r) {
        if (!fast(r, c, m, lo, top, offset)) {
          half(r, c, m0, t0.t);
          if (n > 16) half(r, c + 16, m1, t1.t);
        }
      }
    }
  }
  return true;
}

// float32 input: 1 x 32 tiles sixteen at a time (each tile's amax a reduction), or 32 x 1
// tiles in strips of 16 columns; every element on the passes' 16-lane path (half), with its
// tile's multipliers and thresholds in x's own scale.
template <MxRule kRule, class Half>
bool each_row_tile_f32(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                       std::uint8_t* scale_codes, Half&& half) {
  const auto* x = static_cast<const float*>(in.x);
  const std::int64_t begin = in.r0 * in.cols, tiles = (in.r1 - in.r0) * in.cols / 32;
  const __m512i abs_mask = set1(0x7fffffff);
  for (std::int64_t t0 = 0; t0 < tiles; t0 += 16) {
    const int n = tiles - t0 < 16 ? static_cast<int>(tiles - t0) : 16;
    const std::int64_t base = begin + t0 * 32;
    alignas(64) std::uint32_t amax[16] = {};
    for (int j = 0; j < n; ++j) {
      const float* tile = x + base + 32 * j;
      amax[j] = _mm512_reduce_max_epu32(_mm512_max_epu32(
          _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(tile)), abs_mask),
          _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(tile + 16)), abs_mask)));
    }
    const __m512i u = _mm512_load_si512(amax);
    const __mmask16 lanes = lanes_below(n);
    if (_mm512_mask_cmpge_epu32_mask(lanes, u, set1(0x7f800000)) != 0) return false;
    const __m512i f = fields16<kRule>(u, mx, g.mantissa_bits);
    if (scale_codes != nullptr) _mm512_mask_cvtepi32_storeu_epi8(scale_codes + base / 32, lanes, f);
    const TileVectors tv = tile_vectors(u, f, g);
    alignas(64) float enc[16], dec[16], lo[16], magic[16], top[16];
    _mm512_store_ps(enc, tv.t.enc);
    _mm512_store_ps(dec, tv.t.dec);
    _mm512_store_ps(lo, tv.t.lo);
    _mm512_store_ps(magic, tv.t.magic);
    _mm512_store_ps(top, tv.t.top);
    for (int j = 0; j < n; ++j) {
      const Tile16 t{_mm512_set1_ps(enc[j]), _mm512_set1_ps(dec[j]), _mm512_set1_ps(lo[j]),
                     _mm512_set1_ps(magic[j]), _mm512_set1_ps(top[j])};
      half(0, base + 32 * j, 0xffff, t);
      half(0, base + 32 * j + 16, 0xffff, t);
    }
  }
  return true;
}

template <MxRule kRule, class Half>
bool each_column_tile_f32(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                          std::uint8_t* scale_codes, Half&& half) {
  const auto* x = static_cast<const float*>(in.x);
  const std::int64_t cols = in.cols;
  const __m512i abs_mask = set1(0x7fffffff);
  for (std::int64_t b0 = in.r0; b0 < in.r1; b0 += 32) {
    const std::int64_t b1 = b0 + 32 < in.r1 ? b0 + 32 : in.r1;
    for (std::int64_t c = 0; c < cols; c += 16) {
      const __mmask16 m = lanes_below(cols - c);
      __m512i u = _mm512_setzero_si512();
      for (std::int64_t r = b0; r < b1; ++r) {
        u = _mm512_max_epu32(
            u, _mm512_and_si512(_mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + r * cols + c)),
                                abs_mask));
      }
      if (_mm512_cmpge_epu32_mask(u, set1(0x7f800000)) != 0) return false;
      const __m512i f = fields16<kRule>(u, mx, g.mantissa_bits);
      if (scale_codes != nullptr) {
        _mm512_mask_cvtepi32_storeu_epi8(scale_codes + b0 / 32 * cols + c, m, f);
      }
      const Tile16 t = tile_vectors(u, f, g).t;
      for (std::int64_t r = b0; r < b1; ++r) half(r, c, m, t);
    }
  }
  return true;
}

// iterate(fast, half) over in's tiles under mx's rule; false where some amax is not finite.
template <class Fast, class Half>
bool each_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g, std::uint8_t* scale_codes,
               const Fast& fast, const Half& half) {
  const auto run = [&](auto rule) {
    constexpr MxRule kRule = decltype(rule)::value;
    if (!in.bf16) {
      return mx.row_tiles ? each_row_tile_f32<kRule>(in, mx, g, scale_codes, half)
                          : each_column_tile_f32<kRule>(in, mx, g, scale_codes, half);
    }
    return mx.row_tiles ? each_row_tile<kRule>(in, mx, g, scale_codes, fast, half)
                        : each_column_tile<kRule>(in, mx, g, scale_codes, fast, half);
  };
  return with_rule(mx.rule, false, run);
}

}  // namespace

MxPassAnswer mx_values_avx512(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                              const ElementCodec& codec, std::uint16_t* out) {
  bool finished = true;
  const ValuesAnswer a =
      values_with<false>(in, g, codec, out, [&](const auto& fast, const auto& half) {
        finished = each_tile(in, mx, g, nullptr, fast, half);
      });
  return {finished && !a.nonfinite, a.wrong};
}

bool mx_codes_avx512(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                     const ElementCodec& codec, std::uint8_t* out, std::uint8_t* scale_codes) {
  bool finished = true;
  const bool nonfinite =
      codes_with<false>(in, g, codec, out, [&](const auto& fast, const auto& half) {
        finished = each_tile(in, mx, g, scale_codes, fast, half);
      });
  return finished && !nonfinite;
}

}  // namespace mantissa::quant::detail
