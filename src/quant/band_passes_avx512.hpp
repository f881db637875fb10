#pragma once
// Internal, for files compiled with -mavx512f -mavx512bw only: what the block quantizers'
// band passes share (block_bands_avx512.cpp with its tile arrays, mx_tiles_avx512.cpp with MX
// scales found in registers): lane masks and loads, the amaxes of 16 row tiles at once, the
// 32-lane rounding of plain bfloat16 tiles, and the values and codes passes themselves,
// written once around an iteration that hands them 32 lanes with their tiles' thresholds
// (fast) or 16 lanes with their multipliers (half).
#include <immintrin.h>

#include <cstdint>

#include "band_grid_avx512.hpp"
#include "block_bands_avx512.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::quant::detail::band_passes {

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

// y's lanes `bad` (infinities and NaNs) through the codec: rounded values (a NaN tile's
// element 0, so its value is 0 * NaN as on the vector path); codes: band_grid_avx512.hpp.
inline __m512 codec_values(__m512 y, __m512 q, __m512 dec, __mmask16 bad,
                           const ElementCodec& codec) {
  alignas(64) float yl[16], ql[16], dl[16];
  _mm512_store_ps(yl, y);
  _mm512_store_ps(ql, q);
  _mm512_store_ps(dl, dec);
  for (int i = 0; i < 16; ++i) {
    if ((bad >> i) & 1u) ql[i] = dl[i] != dl[i] ? 0.0f : codec.value(codec.ctx, yl[i]);
  }
  return _mm512_load_ps(ql);
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

// The values pass: iterate(fast, half) calls fast(r, c, lanes32, lo16, top16, offset16) for
// 32 bfloat16 lanes of plain tiles (it answers false, storing nothing, where it declines)
// and half(r, c, lanes16, Tile16) for 16 lanes with their multipliers.
template <bool kCodec, class Iterate>
ValuesAnswer values_with(const BandRows& in, const BandGrid& g, const ElementCodec& codec,
                         std::uint16_t* out, Iterate&& iterate) {
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
  const int shift = g.shift - 16;
  const auto* x16 = static_cast<const std::uint16_t*>(in.x);  // read only for bfloat16 input
  const auto fast = [&](std::int64_t r, std::int64_t c, __mmask32 m, __m512i lo, __m512i top,
                        __m512i) {
    const __m512i x = _mm512_maskz_loadu_epi16(m, x16 + r * cols + c);
    const __m512i a = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
    if (declines(m, a, lo)) return false;
    const __m512i v = _mm512_or_si512(
        round32(a, shift, top), _mm512_and_si512(x, _mm512_set1_epi16(static_cast<short>(0x8000))));
    _mm512_mask_storeu_epi16(out + r * cols + c, m, v);
    return true;
  };
  iterate(fast, half);
  return {!sink.exact(), nonfinite != 0};
}

// The codes pass, iterated as values_with; answers whether some element was not finite
// after scaling (without kCodec, whose lanes then need the codec's pass).
template <bool kCodec, class Iterate>
bool codes_with(const BandRows& in, const BandGrid& g, const ElementCodec& codec, std::uint8_t* out,
                Iterate&& iterate) {
  const std::int64_t cols = in.cols;
  __mmask16 nonfinite = 0;
  const __m512 plus_zero = _mm512_set1_ps(g.nvfp4 ? 0.0f : -0.0f);  // y + -0 is y
  const auto half = [&](std::int64_t r, std::int64_t c, __mmask16 m, const Tile16& t) {
    const __m512 y = _mm512_add_ps(_mm512_mul_ps(load16(in, r, c, m), t.enc), plus_zero);
    __m512i code = round_codes16(y, g);
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
  // A normal element's code from its rounded bits: the exponent field less the tile's
  // (offset), the sign above; zero stays zero.
  const int shift = g.shift - 16;
  const auto* x16 = static_cast<const std::uint16_t*>(in.x);  // read only for bfloat16 input
  const auto fast = [&](std::int64_t r, std::int64_t c, __mmask32 m, __m512i lo, __m512i top,
                        __m512i offset) {
    const __m512i x = _mm512_maskz_loadu_epi16(m, x16 + r * cols + c);
    const __m512i a = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
    if (declines(m, a, lo)) return false;
    const __m512i magnitude = _mm512_maskz_sub_epi16(
        _mm512_test_epi16_mask(a, a),
        _mm512_srli_epi16(round32(a, shift, top), static_cast<unsigned>(shift)), offset);
    const __m512i code = _mm512_or_si512(
        magnitude, _mm512_slli_epi16(_mm512_srli_epi16(x, 15), static_cast<unsigned>(g.sign_bit)));
    if (g.packed) {  // pairs of 16-bit lanes in 32 bits
      const auto pairs = static_cast<__mmask16>((1u << (__builtin_popcount(m) / 2)) - 1u);
      _mm512_mask_cvtepi32_storeu_epi8(out + (r * cols + c) / 2, pairs,
                                       _mm512_or_si512(code, _mm512_srli_epi32(code, 12)));
    } else {
      _mm512_mask_cvtepi16_storeu_epi8(out + r * cols + c, m, code);
    }
    return true;
  };
  iterate(fast, half);
  return nonfinite != 0;
}

}  // namespace mantissa::quant::detail::band_passes
