// AVX2 (the library's baseline); entered only when numerics::active_simd_path() is avx2
// (block_bands.cpp). MX over bfloat16 or float32 in one pass, the 8-lane twin of
// mx_tiles_avx512.cpp:
// the E8M0 fields, multipliers and thresholds of 8 row tiles or of a strip of 16 column tiles
// are found in registers right after their amaxes, and the same elements are rounded while
// they are in the L1 cache, by the band passes' own bodies (band_passes_avx2.hpp). The band
// path (block_bands_avx2.cpp) finds the same numbers through arrays, a group of tiles at a
// time, in separate passes.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "band_passes_avx2.hpp"
#include "block_bands_avx2.hpp"

namespace mantissa::quant::detail {
namespace {

using namespace avx2;

inline __m256i all_ones() {
  return _mm256_set1_epi32(-1);
}

inline __m256i is_equal(__m256i a, std::uint32_t b) {
  return _mm256_cmpeq_epi32(a, set1(b));
}

// numerics::mx_scale_fields (block_scales.cpp) on 8 lanes of amax magnitude bits u (at most
// 0x7fffffff: signed comparisons order them), bit for bit: the rule's exponent clamped to
// -127..127 plus 127; 0 for amax 0, 0xfe for an infinity, 0xff for a NaN.
template <MxRule kRule>
inline __m256i fields8(__m256i u, const MxTiles& mx, int mantissa_bits) {
  const __m256i one = set1(1);
  __m256i field;
  if constexpr (kRule == MxRule::rceil) {
    // amax times the float32 reciprocal of max; any mantissa bit rounds the exponent up (a
    // float32 subnormal up to 2^-127 gives 2^-127).
    const __m256i q = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_castsi256_ps(u), _mm256_set1_ps(mx.reciprocal_max)));
    const __m256i f = _mm256_srli_epi32(q, 23);
    const __m256i mantissa = _mm256_and_si256(q, set1(0x7fffff));
    const __m256i half_or_less_of_subnormal =
        _mm256_and_si256(is_equal(f, 0), _mm256_cmpgt_epi32(set1(0x400001), mantissa));
    const __m256i stays = _mm256_or_si256(_mm256_or_si256(is_equal(mantissa, 0), is_equal(f, 0xfe)),
                                          half_or_less_of_subnormal);
    field = _mm256_min_epu32(_mm256_add_epi32(f, _mm256_andnot_si256(stays, one)), set1(0xfe));
  } else {
    const __m256i normal = _mm256_cmpgt_epi32(u, set1(0x007fffff));
    // floor(log2(amax)): a normal's exponent; a subnormal's from its integer value as a float
    // (exact: below 2^23).
    const __m256i floor_log2 = _mm256_blendv_epi8(
        _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(u)), 23),
                         set1(127 + 149)),
        _mm256_sub_epi32(_mm256_srli_epi32(u, 23), set1(127)), normal);
    __m256i e;
    if constexpr (kRule == MxRule::floor) {
      e = floor_log2;
    } else if constexpr (kRule == MxRule::ceil) {
      const __m256i exact =
          _mm256_blendv_epi8(is_equal(_mm256_and_si256(u, _mm256_sub_epi32(u, one)), 0),
                             is_equal(_mm256_and_si256(u, set1(0x7fffff)), 0), normal);
      e = _mm256_add_epi32(floor_log2, _mm256_andnot_si256(exact, one));
    } else {
      // Half an element ulp added to the float32 bits, the mantissa dropped (ties away; a
      // carry moves to the next binade).
      const __m256i rounded =
          _mm256_add_epi32(u, set1(1u << static_cast<unsigned>(22 - mantissa_bits)));
      e = _mm256_blendv_epi8(set1(static_cast<std::uint32_t>(-127)),
                             _mm256_sub_epi32(_mm256_srli_epi32(rounded, 23), set1(127)),
                             _mm256_cmpgt_epi32(rounded, set1(0x007fffff)));
    }
    e = _mm256_sub_epi32(e, set1(static_cast<std::uint32_t>(mx.emax)));
    e = _mm256_min_epi32(_mm256_max_epi32(e, set1(static_cast<std::uint32_t>(-127))), set1(127));
    field = _mm256_add_epi32(e, set1(127));
  }
  field = _mm256_andnot_si256(is_equal(u, 0), field);
  field = _mm256_blendv_epi8(field, set1(0xfe), is_equal(u, 0x7f800000));
  return _mm256_blendv_epi8(field, set1(0xff), _mm256_cmpgt_epi32(u, set1(0x7f800000)));
}

// 8 tiles' multipliers and thresholds from their amaxes u and fields f, as block_bands.cpp's
// mx_multipliers and ScaleArrays::thresholds find them: the bfloat16 forms in 32-bit lanes,
// and which tiles are plain for round_plain8 (a power of two within 2^-100..2^100, a finite
// amax, and a top below top_limit).
struct TileVectors {
  __m256 enc, dec, lo, magic, top;
  __m256i plain, lo16, top16, offset16;
};

inline TileVectors tile_vectors(__m256i u, __m256i f, const BandGrid& g) {
  const __m256i nan = is_equal(f, 0xff);
  __m256i db = _mm256_blendv_epi8(_mm256_slli_epi32(f, 23), set1(0x00400000),
                                  is_equal(f, 0));  // 2^-127, a float32 subnormal
  db = _mm256_blendv_epi8(db, set1(0x7fc00000), nan);
  __m256i eb = _mm256_blendv_epi8(_mm256_slli_epi32(_mm256_sub_epi32(set1(254), f), 23),
                                  set1(0x00400000), is_equal(f, 254));
  eb = _mm256_andnot_si256(nan, eb);
  TileVectors v;
  v.enc = _mm256_castsi256_ps(eb);
  v.dec = _mm256_castsi256_ps(db);
  const __m256i in_range = _mm256_and_si256(_mm256_cmpgt_epi32(db, set1(0x0d7fffff)),
                                            _mm256_cmpgt_epi32(set1(0x71800001), db));
  const __m256i power_of_two = is_equal(_mm256_and_si256(db, set1(0x7fffff)), 0);
  v.plain = _mm256_and_si256(_mm256_and_si256(in_range, power_of_two),
                             _mm256_cmpgt_epi32(set1(0x7f800000), u));
  v.lo = _mm256_blendv_ps(_mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                          _mm256_mul_ps(_mm256_set1_ps(g.min_normal), v.dec),
                          _mm256_castsi256_ps(v.plain));
  v.magic = _mm256_mul_ps(_mm256_set1_ps(g.subnormal_magic), v.dec);
  v.top = _mm256_mul_ps(_mm256_set1_ps(g.max), v.dec);
  v.lo16 =
      _mm256_blendv_epi8(set1(0xffff), _mm256_srli_epi32(_mm256_castps_si256(v.lo), 16), v.plain);
  v.top16 = _mm256_srli_epi32(_mm256_castps_si256(v.top), 16);
  v.offset16 = _mm256_and_si256(
      _mm256_sll_epi32(
          _mm256_sub_epi32(_mm256_srli_epi32(db, 23), set1(static_cast<std::uint32_t>(g.bias))),
          _mm_cvtsi32_si128(g.mantissa_bits)),
      set1(0xffff));
  // round_plain8's bound on top (band_passes_avx2.hpp: top_limit).
  v.plain = _mm256_and_si256(
      v.plain, _mm256_castps_si256(_mm256_cmp_ps(v.top, _mm256_set1_ps(top_limit(g)), _CMP_LT_OQ)));
  return v;
}

// Whether any lane's amax is an infinity or NaN (the rows then go to the band path).
inline bool any_nonfinite(__m256i u) {
  return !_mm256_testz_si256(_mm256_cmpgt_epi32(u, set1(0x7f7fffff)), all_ones());
}

// 8 row tiles' multipliers and thresholds as arrays, for each tile's broadcast.
struct TileLanes {
  alignas(32) float enc[8], dec[8], magic[8], top[8];
  int plain;

  explicit TileLanes(const TileVectors& v)
      : plain(_mm256_movemask_ps(_mm256_castsi256_ps(v.plain))) {
    _mm256_store_ps(enc, v.enc);
    _mm256_store_ps(dec, v.dec);
    _mm256_store_ps(magic, v.magic);
    _mm256_store_ps(top, v.top);
  }
  // Tile j's constants in every lane (band_passes_avx2.hpp's Tile8).
  Tile8 tile(int j) const {
    return {_mm256_set1_ps(enc[j]), _mm256_set1_ps(dec[j]), _mm256_set1_ps(magic[j]),
            _mm256_set1_ps(top[j]), ((plain >> j) & 1) != 0};
  }
};

// 1 x 32 tiles: rows [r0, r1) are one run of whole tiles, eight at a time.
template <MxRule kRule, class Body8, class Sixteen>
bool each_row_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                   std::uint8_t* scale_codes, const Body8& body8, const Sixteen& sixteen) {
  const auto* x = static_cast<const std::uint16_t*>(in.x);
  const std::int64_t begin = in.r0 * in.cols, tiles = (in.r1 - in.r0) * in.cols / 32;
  for (std::int64_t t0 = 0; t0 < tiles; t0 += 8) {
    const int n = tiles - t0 < 8 ? static_cast<int>(tiles - t0) : 8;
    const std::int64_t base = begin + t0 * 32;  // the first element, as row 0's column
    __m256i u;
    if (n == 8) {
      u = tile_maxima8(x + base);
    } else {  // the last tiles, zero tiles after them
      alignas(32) std::uint16_t last[8 * 32] = {};
      std::memcpy(last, x + base, static_cast<std::size_t>(n) * 32 * sizeof(std::uint16_t));
      u = tile_maxima8(last);
    }
    if (any_nonfinite(u)) return false;
    const __m256i f = fields8<kRule>(u, mx, g.mantissa_bits);
    if (scale_codes != nullptr) store_codes(scale_codes + base / 32, f, n, false);
    const TileVectors tv = tile_vectors(u, f, g);
    alignas(32) std::uint32_t lo16[8], top16[8], offset16[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lo16), tv.lo16);
    _mm256_store_si256(reinterpret_cast<__m256i*>(top16), tv.top16);
    _mm256_store_si256(reinterpret_cast<__m256i*>(offset16), tv.offset16);
    const TileLanes lanes(tv);
    for (int j = 0; j < n; ++j) {
      const Tile16 k{_mm256_set1_epi16(static_cast<short>(lo16[j])),
                     _mm256_set1_epi16(static_cast<short>(top16[j])),
                     _mm256_set1_epi16(static_cast<short>(offset16[j]))};
      for (std::int64_t c = base + 32 * j; c < base + 32 * (j + 1); c += 16) {
        if (sixteen(0, c, k)) continue;
        const Tile8 t = lanes.tile(j);
        body8(0, c, 8, t);
        body8(0, c + 8, 8, t);
      }
    }
  }
  return true;
}

// Two vectors of 8 values below 2^16 in 32-bit lanes as one of 16 16-bit lanes, in order.
inline __m256i join16(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
}

inline Tile8 tile8(const TileVectors& v) {
  return {v.enc, v.dec, v.magic, v.top, _mm256_movemask_ps(_mm256_castsi256_ps(v.plain)) == 0xff};
}

// Over each band of 32 rows and each strip of up to 16 vectors of kLanes columns (the band's
// part then in the L1 cache, each row's part read as one run): strip(b0, b1, c0, vectors, acc)
// with acc[v] the unsigned maximum (fold) over the band's rows of the magnitudes load gives
// for vector v; false where strip answers false.
template <std::int64_t kLanes, class T, class Load, class Fold, class Strip>
bool each_strip(const BandRows& in, Load load, Fold fold, Strip&& strip) {
  constexpr std::int64_t kStrip = 16;
  const auto* x = static_cast<const T*>(in.x);
  const std::int64_t cols = in.cols;
  for (std::int64_t b0 = in.r0; b0 < in.r1; b0 += 32) {
    const std::int64_t b1 = b0 + 32 < in.r1 ? b0 + 32 : in.r1;
    for (std::int64_t c0 = 0; c0 < cols; c0 += kLanes * kStrip) {
      const std::int64_t vectors = (cols - c0) / kLanes < kStrip ? (cols - c0) / kLanes : kStrip;
      __m256i acc[kStrip];
      for (std::int64_t v = 0; v < vectors; ++v) acc[v] = _mm256_setzero_si256();
      for (std::int64_t r = b0; r < b1; ++r) {
        const T* row = x + r * cols + c0;
        for (std::int64_t v = 0; v < vectors; ++v) acc[v] = fold(acc[v], load(row + kLanes * v));
      }
      if (!strip(b0, b1, c0, vectors, acc)) return false;
    }
  }
  return true;
}

// 32 x 1 tiles (cols a multiple of 16): in strips of up to 256 columns over each band of 32
// rows (each_strip), the strip's amaxes 16 columns a vector, their fields, multipliers and
// thresholds, then the strip's rows rounded.
template <MxRule kRule, class Body8, class Sixteen>
bool each_column_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                      std::uint8_t* scale_codes, const Body8& body8, const Sixteen& sixteen) {
  const auto load = [](const std::uint16_t* p) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                            _mm256_set1_epi16(0x7fff));
  };
  const auto fold = [](__m256i a, __m256i b) { return _mm256_max_epu16(a, b); };
  return each_strip<16, std::uint16_t>(
      in, load, fold,
      [&](std::int64_t b0, std::int64_t b1, std::int64_t c0, std::int64_t vectors,
          const __m256i* acc) {
        Tile16 k[16];
        Tile8 t[32];
        for (std::int64_t v = 0; v < vectors; ++v) {
          const __m256i u0 =
              _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(acc[v])), 16);
          const __m256i u1 =
              _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(acc[v], 1)), 16);
          if (any_nonfinite(_mm256_max_epu32(u0, u1))) return false;
          const __m256i f0 = fields8<kRule>(u0, mx, g.mantissa_bits);
          const __m256i f1 = fields8<kRule>(u1, mx, g.mantissa_bits);
          if (scale_codes != nullptr) {
            std::uint8_t* s = scale_codes + b0 / 32 * in.cols + c0 + 16 * v;
            store_codes(s, f0, 8, false);
            store_codes(s + 8, f1, 8, false);
          }
          const TileVectors v0 = tile_vectors(u0, f0, g), v1 = tile_vectors(u1, f1, g);
          k[v] = Tile16{join16(v0.lo16, v1.lo16), join16(v0.top16, v1.top16),
                        join16(v0.offset16, v1.offset16)};
          t[2 * v] = tile8(v0);
          t[2 * v + 1] = tile8(v1);
        }
        for (std::int64_t r = b0; r < b1; ++r) {
          for (std::int64_t v = 0; v < vectors; ++v) {
            const std::int64_t c = c0 + 16 * v;
            if (sixteen(r, c, k[v])) continue;
            body8(r, c, 8, t[2 * v]);
            body8(r, c + 8, 8, t[2 * v + 1]);
          }
        }
        return true;
      });
}

// float32 input: 1 x 32 tiles eight at a time (each tile's amax a reduction), or 32 x 1 tiles
// in strips of up to 128 columns (cols a multiple of 8); every element on the 8-lane path
// (body8), with its tile's multipliers and thresholds in x's own scale.
template <MxRule kRule, class Body8>
bool each_row_tile_f32(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                       std::uint8_t* scale_codes, const Body8& body8) {
  const auto* x = static_cast<const float*>(in.x);
  const std::int64_t begin = in.r0 * in.cols, tiles = (in.r1 - in.r0) * in.cols / 32;
  const __m256i abs_mask = set1(0x7fffffffu);
  for (std::int64_t t0 = 0; t0 < tiles; t0 += 8) {
    const int n = tiles - t0 < 8 ? static_cast<int>(tiles - t0) : 8;
    const std::int64_t base = begin + t0 * 32;
    alignas(32) std::uint32_t amax[8] = {};
    for (int j = 0; j < n; ++j) {
      const float* tile = x + base + 32 * j;
      __m256i m = _mm256_setzero_si256();
      for (int k = 0; k < 32; k += 8) {
        m = _mm256_max_epu32(
            m, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(tile + k)), abs_mask));
      }
      amax[j] = max_lane(m);
    }
    const __m256i u = _mm256_load_si256(reinterpret_cast<const __m256i*>(amax));
    if (any_nonfinite(u)) return false;
    const __m256i f = fields8<kRule>(u, mx, g.mantissa_bits);
    if (scale_codes != nullptr) store_codes(scale_codes + base / 32, f, n, false);
    const TileLanes lanes(tile_vectors(u, f, g));
    for (int j = 0; j < n; ++j) {
      const Tile8 t = lanes.tile(j);
      for (std::int64_t c = base + 32 * j; c < base + 32 * (j + 1); c += 8) body8(0, c, 8, t);
    }
  }
  return true;
}

template <MxRule kRule, class Body8>
bool each_column_tile_f32(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                          std::uint8_t* scale_codes, const Body8& body8) {
  const auto load = [](const float* p) {
    return _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p)), set1(0x7fffffffu));
  };
  const auto fold = [](__m256i a, __m256i b) { return _mm256_max_epu32(a, b); };
  return each_strip<8, float>(in, load, fold,
                              [&](std::int64_t b0, std::int64_t b1, std::int64_t c0,
                                  std::int64_t vectors, const __m256i* acc) {
                                Tile8 t[16];
                                for (std::int64_t v = 0; v < vectors; ++v) {
                                  if (any_nonfinite(acc[v])) return false;
                                  const __m256i f = fields8<kRule>(acc[v], mx, g.mantissa_bits);
                                  if (scale_codes != nullptr) {
                                    store_codes(scale_codes + b0 / 32 * in.cols + c0 + 8 * v, f, 8,
                                                false);
                                  }
                                  t[v] = tile8(tile_vectors(acc[v], f, g));
                                }
                                for (std::int64_t r = b0; r < b1; ++r) {
                                  for (std::int64_t v = 0; v < vectors; ++v)
                                    body8(r, c0 + 8 * v, 8, t[v]);
                                }
                                return true;
                              });
}

// The tiles of `in` under mx's rule, each handed to body8 / sixteen; false where some amax is
// not finite.
template <class Body8, class Sixteen>
bool each_tile(const BandRows& in, const MxTiles& mx, const BandGrid& g, std::uint8_t* scale_codes,
               const Body8& body8, const Sixteen& sixteen) {
  const auto run = [&](auto rule) {
    constexpr MxRule kRule = decltype(rule)::value;
    if (!in.bf16) {
      return mx.row_tiles ? each_row_tile_f32<kRule>(in, mx, g, scale_codes, body8)
                          : each_column_tile_f32<kRule>(in, mx, g, scale_codes, body8);
    }
    return mx.row_tiles ? each_row_tile<kRule>(in, mx, g, scale_codes, body8, sixteen)
                        : each_column_tile<kRule>(in, mx, g, scale_codes, body8, sixteen);
  };
  return with_rule(mx.rule, false, run);
}

}  // namespace

MxPassAnswer mx_values_avx2(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                            const ElementCodec& codec, std::uint16_t* out) {
  bool finished = true;
  const bool exact = values_with(in, g, codec, out, [&](const auto& body8, const auto& sixteen) {
    finished = each_tile(in, mx, g, nullptr, body8, sixteen);
  });
  return {finished, !exact};
}

bool mx_codes_avx2(const BandRows& in, const MxTiles& mx, const BandGrid& g,
                   const ElementCodec& codec, std::uint8_t* out, std::uint8_t* scale_codes) {
  bool finished = true;
  codes_with(in, g, codec, out, [&](const auto& body8, const auto& sixteen) {
    finished = each_tile(in, mx, g, scale_codes, body8, sixteen);
  });
  return finished;
}

}  // namespace mantissa::quant::detail
