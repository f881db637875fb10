// Compiled with -mavx512f -mavx512bw; entered only when numerics::active_simd_path() is avx512
// (block_bands.cpp). 16 elements a step, a row's last partial step under a lane mask; an
// element that scales to an infinity or NaN goes through the codec one lane at a time.
#include "block_bands_avx512.hpp"

#include <immintrin.h>

#include "band_grid_avx512.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::kernels::detail {
namespace {

inline __mmask16 lanes_below(std::int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// 16 elements of row r from column c as float32 (masked-off lanes 0; never read).
inline __m512 load16(const BandRows& in, std::int64_t r, std::int64_t c, __mmask16 m) {
  const std::int64_t i = r * in.cols + c;
  if (in.bf16) {
    const __m512i h = _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m),
                                               static_cast<const std::uint16_t*>(in.x) + i);
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
  }
  return _mm512_maskz_loadu_ps(m, static_cast<const float*>(in.x) + i);
}

// 16 lanes' tile multipliers, and for kThresholds the grid's thresholds in x's own scale
// (lo NaN where the tile is not plain: BandScales).
struct Tile16 {
  __m512 enc, dec, lo, magic, top;
};

// body(r, c, lanes, tile) for every 16 elements of the band, with their tiles' multipliers:
// loaded per column, or broadcast once per tile.
template <bool kThresholds, class Body>
inline void each_vector(const BandRows& in, const BandScales& s, Body&& body) {
  const std::int64_t cols = in.cols, tile_cols = s.tile_cols;
  const auto per_column = [&](std::int64_t c, __mmask16 m) {
    Tile16 t{_mm512_maskz_loadu_ps(m, s.encode + c), _mm512_maskz_loadu_ps(m, s.decode + c),
             _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    if constexpr (kThresholds) {
      t.lo = _mm512_maskz_loadu_ps(m, s.lo + c);
      t.magic = _mm512_maskz_loadu_ps(m, s.magic + c);
      t.top = _mm512_maskz_loadu_ps(m, s.top + c);
    }
    return t;
  };
  const auto per_tile = [&](std::int64_t i) {
    Tile16 t{_mm512_set1_ps(s.encode[i]), _mm512_set1_ps(s.decode[i]), _mm512_setzero_ps(),
             _mm512_setzero_ps(), _mm512_setzero_ps()};
    if constexpr (kThresholds) {
      t.lo = _mm512_set1_ps(s.lo[i]);
      t.magic = _mm512_set1_ps(s.magic[i]);
      t.top = _mm512_set1_ps(s.top[i]);
    }
    return t;
  };
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    if (tile_cols == 1) {
      for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 m = lanes_below(cols - c);
        body(r, c, m, per_column(c, m));
      }
      continue;
    }
    for (std::int64_t c0 = 0, i = 0; c0 < cols; c0 += tile_cols, ++i) {
      const Tile16 t = per_tile(i);
      const std::int64_t c1 = c0 + tile_cols < cols ? c0 + tile_cols : cols;
      for (std::int64_t c = c0; c < c1; c += 16) body(r, c, lanes_below(c1 - c), t);
    }
  }
}

inline __mmask32 lanes32_below(std::int64_t n) {
  return n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
}

// The largest of 32 unsigned 16-bit lanes: halves folded, then the SSE4.1 minimum-position
// search on the complements.
inline std::uint32_t reduce_max_epu16(__m512i v) {
  const __m256i h = _mm256_max_epu16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i q = _mm_max_epu16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  const __m128i ones = _mm_set1_epi32(-1);
  return 0xffffu ^
         (static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(q, ones)))) &
          0xffffu);
}

// Sixteen 1 x 32 tiles of bfloat16 magnitudes at once: v[j] holds tile j's 32 magnitudes.
// Returns the 16 tiles' largest magnitudes, tile j's in 32-bit lane j (zero-extended), by
// folding the vectors into one another (two shuffles and a max make two vectors one): each
// tile to 256 bits, pairing tiles (0, 1), (2, 3), ...; to 128 bits, pairing those pairs; to
// 64 bits; then each tile's last four words in place. About four instructions a tile, where
// a reduction per tile takes a dozen.
inline __m512i tile_maxima16(const __m512i (&v)[16]) {
  __m512i half[8], quarter[4], eighth[2];  // tiles folded to 256, 128 and 64 bits
  for (int j = 0; j < 8; ++j) {            // 128-bit lanes: [a0 a1 b0 b1] and [a2 a3 b2 b3]
    half[j] = _mm512_max_epu16(_mm512_shuffle_i64x2(v[2 * j], v[2 * j + 1], 0x44),
                               _mm512_shuffle_i64x2(v[2 * j], v[2 * j + 1], 0xEE));
  }
  for (int j = 0; j < 4; ++j) {  // 128-bit lanes: tiles 4j, 4j + 1, 4j + 2, 4j + 3
    quarter[j] = _mm512_max_epu16(_mm512_shuffle_i64x2(half[2 * j], half[2 * j + 1], 0x88),
                                  _mm512_shuffle_i64x2(half[2 * j], half[2 * j + 1], 0xDD));
  }
  for (int j = 0; j < 2; ++j) {  // each 128-bit lane: quarter[2j]'s tile, then quarter[2j+1]'s
    eighth[j] = _mm512_max_epu16(_mm512_unpacklo_epi64(quarter[2 * j], quarter[2 * j + 1]),
                                 _mm512_unpackhi_epi64(quarter[2 * j], quarter[2 * j + 1]));
  }
  // eighth[j]'s 64-bit lane k (128-bit lane q = k / 2, half h = k % 2) holds four words of
  // tile 4 (2j + h) + q: fold them to the lane's first word.
  __m512i folded[2];
  for (int j = 0; j < 2; ++j) {
    const __m512i m = _mm512_max_epu16(eighth[j], _mm512_srli_epi64(eighth[j], 32));
    folded[j] = _mm512_max_epu16(m, _mm512_srli_epi64(m, 16));
  }
  // Tile t = 8j + 4h + q sits in 32-bit word 2 (2q + h) of folded[j]: gather in tile order.
  const __m512i order =
      _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 16, 20, 24, 28, 18, 22, 26, 30);
  return _mm512_and_si512(_mm512_permutex2var_epi32(folded[0], order, folded[1]),
                          _mm512_set1_epi32(0xffff));
}

// band_amax_avx512 for bfloat16 input, 32 lanes a step: the magnitudes' bits are the high
// half of their float32 bits.
void band_amax_bf16(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
                    std::uint16_t* scratch) {
  const auto* x = static_cast<const std::uint16_t*>(in.x);
  const __m512i abs_mask = _mm512_set1_epi16(0x7fff);
  const std::int64_t cols = in.cols;
  if (tile_cols == 1) {
    for (std::int64_t c = 0; c < cols; c += 32) {
      _mm512_mask_storeu_epi16(scratch + c, lanes32_below(cols - c), _mm512_setzero_si512());
    }
    for (std::int64_t r = in.r0; r < in.r1; ++r) {
      for (std::int64_t c = 0; c < cols; c += 32) {
        const __mmask32 m = lanes32_below(cols - c);
        const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi16(m, x + r * cols + c), abs_mask);
        _mm512_mask_storeu_epi16(scratch + c, m,
                                 _mm512_max_epu16(_mm512_maskz_loadu_epi16(m, scratch + c), a));
      }
    }
    for (std::int64_t c = 0; c < cols; c += 16) {
      const __mmask16 m = lanes_below(cols - c);
      const __m512i wide =
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(
                                _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), scratch + c))),
                            16);
      _mm512_mask_storeu_epi32(amax + c, m,
                               _mm512_max_epu32(_mm512_maskz_loadu_epi32(m, amax + c), wide));
    }
    return;
  }
  // Tiles of 32: whole ones sixteen at a time.
  const std::int64_t batched = tile_cols == 32 ? cols / 512 * 16 : 0;
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    const std::uint16_t* row = x + r * cols;
    for (std::int64_t t0 = 0; t0 < batched; t0 += 16) {
      __m512i v[16];
      for (int j = 0; j < 16; ++j) {
        v[j] = _mm512_and_si512(_mm512_loadu_si512(row + (t0 + j) * 32), abs_mask);
      }
      const __m512i wide = _mm512_slli_epi32(tile_maxima16(v), 16);
      _mm512_storeu_si512(amax + t0, _mm512_max_epu32(_mm512_loadu_si512(amax + t0), wide));
    }
    for (std::int64_t c0 = batched * tile_cols, t = batched; c0 < cols; c0 += tile_cols, ++t) {
      const std::int64_t c1 = c0 + tile_cols < cols ? c0 + tile_cols : cols;
      __m512i acc = _mm512_setzero_si512();
      for (std::int64_t c = c0; c < c1; c += 32) {
        acc = _mm512_max_epu16(
            acc, _mm512_and_si512(_mm512_maskz_loadu_epi16(lanes32_below(c1 - c), x + r * cols + c),
                                  abs_mask));
      }
      const std::uint32_t tile_max = reduce_max_epu16(acc) << 16;
      if (tile_max > amax[t]) amax[t] = tile_max;
    }
  }
}

}  // namespace

void band_amax_avx512(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
                      std::uint16_t* scratch) {
  if (in.bf16 && scratch != nullptr && (tile_cols == 1 || tile_cols % 32 == 0)) {
    band_amax_bf16(in, tile_cols, amax, scratch);
    return;
  }

  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    if (tile_cols == 1) {
      for (std::int64_t c = 0; c < in.cols; c += 16) {
        const __mmask16 m = lanes_below(in.cols - c);
        const __m512i a = _mm512_and_si512(_mm512_castps_si512(load16(in, r, c, m)), abs_mask);
        const __m512i cur = _mm512_maskz_loadu_epi32(m, amax + c);
        _mm512_mask_storeu_epi32(amax + c, m, _mm512_max_epu32(cur, a));
      }
      continue;
    }
    for (std::int64_t c0 = 0, t = 0; c0 < in.cols; c0 += tile_cols, ++t) {
      const std::int64_t c1 = c0 + tile_cols < in.cols ? c0 + tile_cols : in.cols;
      __m512i acc = _mm512_setzero_si512();
      for (std::int64_t c = c0; c < c1; c += 16) {
        const __mmask16 m = lanes_below(c1 - c);
        acc = _mm512_max_epu32(
            acc, _mm512_and_si512(_mm512_castps_si512(load16(in, r, c, m)), abs_mask));
      }
      const std::uint32_t tile_max = _mm512_reduce_max_epu32(acc);
      if (tile_max > amax[t]) amax[t] = tile_max;
    }
  }
}

namespace {

// y's lanes `bad` (infinities and NaNs) through the codec: rounded values (a NaN tile's
// element 0, so its value is 0 * NaN as on the vector path); codes: band_grid_avx512.hpp.
__m512 codec_values(__m512 y, __m512 q, __m512 dec, __mmask16 bad, const ElementCodec& codec) {
  alignas(64) float yl[16], ql[16], dl[16];
  _mm512_store_ps(yl, y);
  _mm512_store_ps(ql, q);
  _mm512_store_ps(dl, dec);
  for (int i = 0; i < 16; ++i) {
    if ((bad >> i) & 1u) ql[i] = dl[i] != dl[i] ? 0.0f : codec.value(codec.ctx, yl[i]);
  }
  return _mm512_load_ps(ql);
}

// For bfloat16 input whose tiles are one column or a multiple of 32 columns wide: 32 elements
// at a time, fast(r, c, lanes, lo, top, code offset) with the tiles' thresholds as bfloat16
// bits; where it declines (a nonzero lane below lo, or a tile that is not plain), half(r, c,
// lanes, tile) for each 16.
template <class Fast, class Half>
inline void each_pair(const BandRows& in, const BandScales& s, Fast&& fast, Half&& half) {
  const std::int64_t cols = in.cols, tile_cols = s.tile_cols;
  const auto halves = [&](std::int64_t r, std::int64_t c, std::int64_t n, const Tile16& t0,
                          const Tile16& t1) {
    half(r, c, lanes_below(n), t0);
    if (n > 16) half(r, c + 16, lanes_below(n - 16), t1);
  };
  const auto column_tile = [&](std::int64_t c, std::int64_t n) {
    const __mmask16 m = lanes_below(n);
    return Tile16{_mm512_maskz_loadu_ps(m, s.encode + c), _mm512_maskz_loadu_ps(m, s.decode + c),
                  _mm512_maskz_loadu_ps(m, s.lo + c), _mm512_maskz_loadu_ps(m, s.magic + c),
                  _mm512_maskz_loadu_ps(m, s.top + c)};
  };
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    if (tile_cols == 1) {
      for (std::int64_t c = 0; c < cols; c += 32) {
        const std::int64_t n = cols - c < 32 ? cols - c : 32;
        const __mmask32 m = n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
        if (!fast(r, c, m, _mm512_maskz_loadu_epi16(m, s.lo16 + c),
                  _mm512_maskz_loadu_epi16(m, s.top16 + c),
                  _mm512_maskz_loadu_epi16(m, s.offset16 + c))) {
          halves(r, c, n, column_tile(c, n), column_tile(c + 16, n > 16 ? n - 16 : 0));
        }
      }
      continue;
    }
    for (std::int64_t c0 = 0, i = 0; c0 < cols; c0 += tile_cols, ++i) {
      const __m512i lo = _mm512_set1_epi16(static_cast<short>(s.lo16[i]));
      const __m512i top = _mm512_set1_epi16(static_cast<short>(s.top16[i]));
      const __m512i offset = _mm512_set1_epi16(static_cast<short>(s.offset16[i]));
      const std::int64_t c1 = c0 + tile_cols < cols ? c0 + tile_cols : cols;
      for (std::int64_t c = c0; c < c1; c += 32) {
        const std::int64_t n = c1 - c < 32 ? c1 - c : 32;
        const __mmask32 m = n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
        if (!fast(r, c, m, lo, top, offset)) {
          const Tile16 t{_mm512_set1_ps(s.encode[i]), _mm512_set1_ps(s.decode[i]),
                         _mm512_set1_ps(s.lo[i]), _mm512_set1_ps(s.magic[i]),
                         _mm512_set1_ps(s.top[i])};
          halves(r, c, n, t, t);
        }
      }
    }
  }
}

// 32 bfloat16 magnitudes a (of x) rounded to the grid in x's scale, `shift` low bits dropped
// (nearest-even on the bits; the tile is plain and every nonzero lane at or above lo, so
// no subnormal spacing applies), saturated at top.
inline __m512i round32(__m512i a, int shift, __m512i top) {
  const __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi16(a, static_cast<unsigned>(shift)), _mm512_set1_epi16(1));
  const __m512i rounded = _mm512_and_si512(
      _mm512_add_epi16(
          a, _mm512_add_epi16(_mm512_set1_epi16(static_cast<short>((1 << (shift - 1)) - 1)), lsb)),
      _mm512_set1_epi16(static_cast<short>(~((1u << shift) - 1u))));
  return _mm512_min_epu16(rounded, top);
}

// Whether the fast path declines these 32 lanes: a nonzero magnitude below lo, or a tile
// that is not plain (lo all ones).
inline bool declines(__mmask32 m, __m512i a, __m512i lo) {
  const __mmask32 watched =
      _mm512_mask_test_epi16_mask(m, a, a) | _mm512_cmpeq_epi16_mask(lo, _mm512_set1_epi16(-1));
  return _mm512_mask_cmplt_epu16_mask(m & watched, a, lo) != 0;
}

// Where values go as bfloat16 bits: 16 float32 values stored as their high halves (an
// unmasked store for a whole vector), and whether every one so far was a bfloat16 value (the
// low halves zero, no float32 subnormal).
struct Bf16Out {
  __m512i low_bits = _mm512_setzero_si512();         // OR of every value's bits
  __m512i smallest = _mm512_set1_epi32(0x7fffffff);  // the smallest nonzero magnitude

  void checked(std::uint16_t* o, __mmask16 m, __m512i v) {
    const __m512i mag = _mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff));
    low_bits = _mm512_mask_or_epi32(low_bits, m, low_bits, v);
    smallest =
        _mm512_mask_min_epu32(smallest, _mm512_mask_test_epi32_mask(m, mag, mag), smallest, mag);
    store(o, m, v);
  }
  static void store(std::uint16_t* o, __mmask16 m, __m512i v) {
    if (m == 0xffff) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o),
                          _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
    } else {
      _mm512_mask_cvtepi32_storeu_epi16(o, m, _mm512_srli_epi32(v, 16));
    }
  }
  bool exact() const {
    return (_mm512_reduce_or_epi32(low_bits) & 0xffff) == 0 &&
           _mm512_reduce_min_epu32(smallest) >= 0x00800000u;
  }
};

// The band's values (kCodec: with the codec for infinities and NaNs, the rare second pass;
// without, the hot loop makes no call). A vector whose tiles are all plain is rounded in x's
// own scale: no multiplier, its values bfloat16 values and finite by construction (the tile's
// amax is). (A struct of this file, not std::pair: nothing here may lend the rest of the
// program an AVX-512 copy of a shared inline function.)
struct ValuesAnswer {
  bool wrong;      // some value not a bfloat16 value
  bool nonfinite;  // some element not finite after scaling
};
template <bool kCodec>
ValuesAnswer values_pass(const BandRows& in, const BandScales& s, const BandGrid& g,
                         const ElementCodec& codec, std::uint16_t* out) {
  const std::int64_t cols = in.cols;
  Bf16Out sink;
  __mmask16 nonfinite = 0;
  const auto half = [&](std::int64_t r, std::int64_t c, __mmask16 m, const Tile16& t) {
    const __m512 x = load16(in, r, c, m);
    std::uint16_t* o = out + r * cols + c;
    if (_mm512_mask_cmp_ps_mask(m, t.lo, t.lo, _CMP_UNORD_Q) == 0) {  // bfloat16 values
      Bf16Out::store(o, m, _mm512_castps_si512(round16(x, g.shift, t.lo, t.magic, t.top)));
    } else {
      const __m512 y = _mm512_mul_ps(x, t.enc);
      __m512 q = round16(y, g);
      const __mmask16 bad = nonfinite16(y, m);
      if constexpr (kCodec) {
        if (bad != 0) q = codec_values(y, q, t.dec, bad, codec);
      } else {
        nonfinite |= bad;
      }
      sink.checked(o, m, _mm512_castps_si512(_mm512_mul_ps(q, t.dec)));
    }
  };
  if (!kCodec && s.lo16 != nullptr) {
    const int shift = g.shift - 16;
    const auto* x16 = static_cast<const std::uint16_t*>(in.x);
    each_pair(
        in, s,
        [&](std::int64_t r, std::int64_t c, __mmask32 m, __m512i lo, __m512i top, __m512i) {
          const __m512i x = _mm512_maskz_loadu_epi16(m, x16 + r * cols + c);
          const __m512i a = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
          if (declines(m, a, lo)) return false;
          const __m512i v =
              _mm512_or_si512(round32(a, shift, top),
                              _mm512_and_si512(x, _mm512_set1_epi16(static_cast<short>(0x8000))));
          _mm512_mask_storeu_epi16(out + r * cols + c, m, v);
          return true;
        },
        half);
  } else {
    each_vector<true>(in, s, half);
  }
  return {!sink.exact(), nonfinite != 0};
}

template <bool kCodec>
bool codes_pass(const BandRows& in, const BandScales& s, const BandGrid& g,
                const ElementCodec& codec, std::uint8_t* out) {
  const std::int64_t cols = in.cols;
  __mmask16 nonfinite = 0;
  const __m512 plus_zero = _mm512_set1_ps(g.nvfp4 ? 0.0f : -0.0f);  // y + -0 is y
  const auto half = [&](std::int64_t r, std::int64_t c, __mmask16 m, const Tile16& t) {
    const __m512 y = _mm512_add_ps(_mm512_mul_ps(load16(in, r, c, m), t.enc), plus_zero);
    __m512i code = codes16(round16(y, g), g);
    const __mmask16 bad = nonfinite16(y, m);
    if constexpr (kCodec) {
      if (bad != 0) code = codec_codes(y, code, bad, codec);
    } else {
      nonfinite |= bad;
    }
    // NaN tiles: codes 0.
    code = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(t.dec, t.dec, _CMP_ORD_Q), code);
    if (g.packed) {  // two codes a byte, the even element's low: pairs of lanes in 64 bits
      const auto pairs = static_cast<__mmask8>((1u << (__builtin_popcount(m) / 2)) - 1u);
      _mm512_mask_cvtepi64_storeu_epi8(out + (r * cols + c) / 2, pairs,
                                       _mm512_or_si512(code, _mm512_srli_epi64(code, 28)));
      return;
    }
    std::uint8_t* o = out + r * cols + c;
    if (m == 0xffff) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm512_cvtepi32_epi8(code));
    } else {
      _mm512_mask_cvtepi32_storeu_epi8(o, m, code);
    }
  };
  if (!kCodec && s.lo16 != nullptr) {
    // A normal element's code from its rounded bits: the exponent field less the tile's
    // (offset), the sign above; zero stays zero.
    const int shift = g.shift - 16;
    const auto* x16 = static_cast<const std::uint16_t*>(in.x);
    each_pair(
        in, s,
        [&](std::int64_t r, std::int64_t c, __mmask32 m, __m512i lo, __m512i top, __m512i offset) {
          const __m512i x = _mm512_maskz_loadu_epi16(m, x16 + r * cols + c);
          const __m512i a = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
          if (declines(m, a, lo)) return false;
          const __m512i magnitude = _mm512_maskz_sub_epi16(
              _mm512_test_epi16_mask(a, a),
              _mm512_srli_epi16(round32(a, shift, top), static_cast<unsigned>(shift)), offset);
          const __m512i code = _mm512_or_si512(
              magnitude,
              _mm512_slli_epi16(_mm512_srli_epi16(x, 15), static_cast<unsigned>(g.sign_bit)));
          if (g.packed) {  // pairs of 16-bit lanes in 32 bits
            const auto pairs = static_cast<__mmask16>((1u << (__builtin_popcount(m) / 2)) - 1u);
            _mm512_mask_cvtepi32_storeu_epi8(out + (r * cols + c) / 2, pairs,
                                             _mm512_or_si512(code, _mm512_srli_epi32(code, 12)));
          } else {
            _mm512_mask_cvtepi16_storeu_epi8(out + r * cols + c, m, code);
          }
          return true;
        },
        half);
  } else {
    each_vector<false>(in, s, half);
  }
  return nonfinite != 0;
}

// The values of 16 codes' magnitudes idx from the table in registers (16, 32 or 128
// entries: one permute, one two-source permute, or four and a blend by bits 5 and 6).
struct MagnitudeTable {
  __m512 t[8];
  int entries;
  explicit MagnitudeTable(const CodeTable& c) : entries(1 << c.sign_bit) {
    for (int i = 0; i < 8; ++i) {
      t[i] = i * 16 < entries ? _mm512_loadu_ps(c.values + i * 16) : _mm512_setzero_ps();
    }
  }
  __m512 operator()(__m512i idx) const {
    if (entries <= 16) return _mm512_permutexvar_ps(idx, t[0]);
    if (entries <= 32) return _mm512_permutex2var_ps(t[0], idx, t[1]);
    const __mmask16 bit5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
    const __mmask16 bit6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
    const __m512 lo = _mm512_mask_blend_ps(bit5, _mm512_permutex2var_ps(t[0], idx, t[1]),
                                           _mm512_permutex2var_ps(t[2], idx, t[3]));
    const __m512 hi = _mm512_mask_blend_ps(bit5, _mm512_permutex2var_ps(t[4], idx, t[5]),
                                           _mm512_permutex2var_ps(t[6], idx, t[7]));
    return _mm512_mask_blend_ps(bit6, lo, hi);
  }
};

}  // namespace

bool band_decode_avx512(const std::uint8_t* codes, std::int64_t cols, std::int64_t r0,
                        std::int64_t r1, const BandScales& s, const CodeTable& t,
                        std::uint16_t* out) {
  const MagnitudeTable table(t);
  const __m512i magnitude_mask = _mm512_set1_epi32((1 << t.sign_bit) - 1);
  Bf16Out sink;
  const BandRows rows{codes, false, cols, r0, r1};
  each_vector<false>(rows, s, [&](std::int64_t r, std::int64_t c, __mmask16 m, const Tile16& tl) {
    __m512i code;
    if (t.packed) {  // 8 bytes of nibble pairs, interleaved low nibble first
      const auto bytes = static_cast<__mmask64>((1u << ((__builtin_popcount(m) + 1) / 2)) - 1u);
      const __m128i b =
          _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(bytes, codes + (r * cols + c) / 2));
      const __m128i nibble = _mm_set1_epi8(0x0f);
      code = _mm512_cvtepu8_epi32(
          _mm_unpacklo_epi8(_mm_and_si128(b, nibble), _mm_and_si128(_mm_srli_epi16(b, 4), nibble)));
    } else {
      code = _mm512_cvtepu8_epi32(_mm512_castsi512_si128(
          _mm512_maskz_loadu_epi8(static_cast<__mmask64>(m), codes + r * cols + c)));
    }
    __m512 v = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(table(_mm512_and_si512(code, magnitude_mask))),
        _mm512_slli_epi32(_mm512_srli_epi32(code, static_cast<unsigned>(t.sign_bit)), 31)));
    if (const __mmask16 nan = _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q); nan != 0) {
      alignas(64) float vl[16];  // a NaN code: its own value's bits
      alignas(64) std::uint32_t cl[16];
      _mm512_store_ps(vl, v);
      _mm512_store_si512(cl, code);
      for (int i = 0; i < 16; ++i) {
        if ((nan >> i) & 1u) vl[i] = t.values[cl[i]];
      }
      v = _mm512_load_ps(vl);
    }
    sink.checked(out + r * cols + c, m, _mm512_castps_si512(_mm512_mul_ps(v, tl.dec)));
  });
  return sink.exact();
}

bool band_values_avx512(const BandRows& in, const BandScales& s, const BandGrid& g,
                        const ElementCodec& codec, std::uint16_t* out) {
  ValuesAnswer r = values_pass<false>(in, s, g, codec, out);
  if (r.nonfinite) r = values_pass<true>(in, s, g, codec, out);  // the band again, with the codec
  return !r.wrong;
}

void band_codes_avx512(const BandRows& in, const BandScales& s, const BandGrid& g,
                       const ElementCodec& codec, std::uint8_t* out) {
  if (codes_pass<false>(in, s, g, codec, out)) codes_pass<true>(in, s, g, codec, out);
}

}  // namespace mantissa::kernels::detail
