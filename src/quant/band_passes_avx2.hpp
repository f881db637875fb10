#pragma once
// Internal, AVX2 (the library's baseline): what the block quantizers' AVX2 passes share
// (block_bands_avx2.cpp with its per-tile arrays, mx_tiles_avx2.cpp with MX scales found in
// registers): 8-lane loads and stores, the 16-lane rounding of plain bfloat16 tiles, and the
// values and codes passes themselves, written once around an iteration that hands them 8
// lanes with their tiles' multipliers or 16 bfloat16 lanes of plain tiles with their
// thresholds. The 8-lane twin of band_passes_avx512.hpp.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "band_grid_avx2.hpp"

namespace mantissa::quant::detail::avx2 {

// Lanes [c, c + n) of row r as float32 (n < 8 only at a row's end; the lanes past n zero).
inline __m256 load8(const BandRows& in, std::int64_t r, std::int64_t c, std::int64_t n) {
  const std::int64_t i = r * in.cols + c;
  const auto* x16 = static_cast<const std::uint16_t*>(in.x);
  const auto* x32 = static_cast<const float*>(in.x);
  if (n == 8) {
    if (!in.bf16) return _mm256_loadu_ps(x32 + i);
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x16 + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  alignas(32) std::uint32_t b[8] = {};
  for (std::int64_t k = 0; k < n; ++k) {
    if (in.bf16) {
      b[k] = static_cast<std::uint32_t>(x16[i + k]) << 16;
    } else {
      std::memcpy(&b[k], x32 + i + k, sizeof(float));
    }
  }
  return _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b)));
}

// The constants of 8 lanes' tiles (BandScales), and whether all 8 tiles are plain and small
// enough for round_plain8 (below top_limit).
struct Tile8 {
  __m256 enc, dec, magic, top;
  bool plain;
};

// The bound a plain tile's top must stay below for round_plain8: |x| at most two binades
// above top (a scale rule may leave amax above the largest value; none by more than a
// binade) gives c at most 2^126, so that |x| + c stays finite.
inline float top_limit(const BandGrid& g) {
  return std::ldexp(1.0f, 125 - g.shift);
}

inline __m256 sign_of(__m256 x) {
  return _mm256_and_ps(x, _mm256_castsi256_ps(set1(0x80000000u)));
}

// The lanes `bad` (infinities and NaNs of y) of q through the codec; a NaN tile's element 0.
inline __m256 codec_values8(__m256 y, __m256 q, __m256 dec, int bad, const ElementCodec& codec) {
  alignas(32) float yl[8], ql[8], dl[8];
  _mm256_store_ps(yl, y);
  _mm256_store_ps(ql, q);
  _mm256_store_ps(dl, dec);
  for (int i = 0; i < 8; ++i) {
    if ((bad >> i) & 1) ql[i] = std::isnan(dl[i]) ? 0.0f : codec.value(codec.ctx, yl[i]);
  }
  return _mm256_load_ps(ql);
}

inline __m256i codec_codes8(__m256 y, __m256i code, int bad, const ElementCodec& codec) {
  alignas(32) float yl[8];
  alignas(32) std::uint32_t cl[8];
  _mm256_store_ps(yl, y);
  _mm256_store_si256(reinterpret_cast<__m256i*>(cl), code);
  for (int i = 0; i < 8; ++i) {
    if ((bad >> i) & 1) cl[i] = codec.code(codec.ctx, yl[i]);
  }
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(cl));
}

// 8 float32 values stored as the high halves of their bits (n of them).
inline void store_bf16(std::uint16_t* o, __m256 v, std::int64_t n) {
  const __m256i hi = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
  if (n == 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), h);
    return;
  }
  alignas(16) std::uint16_t b[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(b), h);
  std::memcpy(o, b, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
}

// 8 codes of one byte (n of them), or two a byte, the even element's low nibble (n even).
inline void store_codes(std::uint8_t* o, __m256i code, std::int64_t n, bool packed) {
  if (packed) {
    const __m256i pairs = _mm256_or_si256(code, _mm256_srli_epi64(code, 28));
    const __m256i gather =
        _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 8, -1, -1,
                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(pairs, gather);
    const auto w = static_cast<std::uint32_t>(_mm_cvtsi128_si32(
        _mm_unpacklo_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1))));
    std::memcpy(o, &w, static_cast<std::size_t>(n / 2));
    return;
  }
  const __m256i gather =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(code, gather);
  const __m128i v = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  if (n == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(o), v);
    return;
  }
  alignas(16) std::uint8_t bytes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(bytes), v);
  std::memcpy(o, bytes, static_cast<std::size_t>(n));
}

// The 16-bit thresholds of 16 lanes' tiles (BandScales' lo16, top16, offset16) for bfloat16
// input: per column for one-column tiles, else the tile's (a multiple of 32 wide).
struct Tile16 {
  __m256i lo, top, offset;
};

// 16 bfloat16 magnitudes a rounded to the grid in x's scale, `shift` low bits dropped
// (nearest-even on the bits: every nonzero lane is at or above the tile's lo, so no
// subnormal spacing applies), saturated at top.
inline __m256i round16(__m256i a, int shift, __m256i top) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(a, shift), _mm256_set1_epi16(1));
  const __m256i rounded = _mm256_and_si256(
      _mm256_add_epi16(
          a, _mm256_add_epi16(_mm256_set1_epi16(static_cast<short>((1 << (shift - 1)) - 1)), lsb)),
      _mm256_set1_epi16(static_cast<short>(~((1u << shift) - 1u))));
  return _mm256_min_epu16(rounded, top);
}

// Whether the 16-lane step declines lanes of magnitudes a: a nonzero one below lo (the
// subnormal spacing would apply), or a tile that is not plain (lo all ones).
inline bool declines16(__m256i a, __m256i lo) {
  const __m256i ones = _mm256_set1_epi16(-1);
  const __m256i below =
      _mm256_andnot_si256(_mm256_cmpeq_epi16(a, _mm256_setzero_si256()), _mm256_cmpgt_epi16(lo, a));
  const __m256i watched = _mm256_or_si256(below, _mm256_cmpeq_epi16(lo, ones));
  return !_mm256_testz_si256(watched, watched);
}

// 16 codes in 16-bit lanes as bytes, or two a byte (the even element's low nibble).
inline void store_codes16(std::uint8_t* o, __m256i code, bool packed) {
  if (packed) {
    const __m256i pairs = _mm256_or_si256(code, _mm256_srli_epi32(code, 12));
    const __m256i gather =
        _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(pairs, gather);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(o),
                     _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    return;
  }
  _mm_storeu_si128(
      reinterpret_cast<__m128i*>(o),
      _mm_packus_epi16(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1)));
}

// The largest of 8 unsigned 32-bit lanes.
inline std::uint32_t max_lane(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4e));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xb1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(m));
}

// Eight 1 x 32 tiles of bfloat16 from row (tile j at row + 32 j): their largest magnitudes
// as float32 bits, tile j's in lane j, by folding the tiles' vectors into one another (two
// tiles to one vector, four to one, then each tile's last four words in place) rather than
// reducing each tile alone.
inline __m256i tile_maxima8(const std::uint16_t* row) {
  const __m256i magnitude = _mm256_set1_epi16(0x7fff);
  const auto load = [&](int j) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * j)),
                            magnitude);
  };
  __m256i v[8], h[4], q[2];
  for (int j = 0; j < 8; ++j) v[j] = _mm256_max_epu16(load(2 * j), load(2 * j + 1));
  for (int j = 0; j < 4; ++j) {  // 128-bit lanes: tile 2j, tile 2j + 1
    h[j] = _mm256_max_epu16(_mm256_permute2x128_si256(v[2 * j], v[2 * j + 1], 0x20),
                            _mm256_permute2x128_si256(v[2 * j], v[2 * j + 1], 0x31));
  }
  for (int j = 0; j < 2; ++j) {  // 64-bit lanes: tiles 4j, 4j + 2, 4j + 1, 4j + 3
    q[j] = _mm256_max_epu16(_mm256_unpacklo_epi64(h[2 * j], h[2 * j + 1]),
                            _mm256_unpackhi_epi64(h[2 * j], h[2 * j + 1]));
    q[j] = _mm256_max_epu16(q[j], _mm256_srli_epi64(q[j], 32));
    q[j] = _mm256_max_epu16(q[j], _mm256_srli_epi64(q[j], 16));
    q[j] = _mm256_and_si256(q[j], _mm256_set1_epi64x(0xffff));
  }
  // 32-bit words 0, 4, 2, 6 of q[j] hold tiles 4j .. 4j + 3.
  const __m256i order = _mm256_setr_epi32(0, 4, 2, 6, 0, 4, 2, 6);
  const __m256i m = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(q[0], order),
                                       _mm256_permutevar8x32_epi32(q[1], order), 0xf0);
  return _mm256_slli_epi32(m, 16);
}

// The 16-lane step over bfloat16 input: sixteen(r, c, tile) loads row r's lanes [c, c + 16),
// declines them (false) where declines16 does, else hands them to body16(r, c, x, a, tile)
// with their magnitudes a.
template <class Body16>
auto sixteen(const BandRows& in, Body16& body16) {
  return [&in, &body16](std::int64_t r, std::int64_t c, const Tile16& t) {
    const auto* x16 = static_cast<const std::uint16_t*>(in.x);
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x16 + r * in.cols + c));
    const __m256i a = _mm256_and_si256(x, _mm256_set1_epi16(0x7fff));
    if (declines16(a, t.lo)) return false;
    body16(r, c, x, a, t);
    return true;
  };
}

// The values pass (band_values_avx2's contract): iterate(body8, sixteen) calls
// body8(r, c, n, Tile8) for n <= 8 lanes with their tiles' multipliers and sixteen(r, c,
// Tile16) for 16 bfloat16 lanes of plain tiles (it answers false, storing nothing, where it
// declines them); answers whether every value was a bfloat16 value.
template <class Iterate>
bool values_with(const BandRows& in, const BandGrid& g, const ElementCodec& codec,
                 std::uint16_t* out, Iterate&& iterate) {
  const std::int64_t cols = in.cols;
  // Over the lanes that scale first: every value's bits OR-ed (their low halves must be zero),
  // and the smallest magnitude less one (a float32 subnormal is below 0x7fffff; zero wraps).
  __m256i low = _mm256_setzero_si256(), below = set1(0xffffffffu);
  const int shift16 = g.shift - 16;
  const auto body8 = [&](std::int64_t r, std::int64_t c, std::int64_t n, const Tile8& t) {
    std::uint16_t* o = out + r * cols + c;
    const __m256 x = load8(in, r, c, n);
    if (t.plain) {
      store_bf16(o, _mm256_or_ps(round_plain8(x, g.shift, t.magic, t.top), sign_of(x)), n);
      return;
    }
    const __m256 y = _mm256_mul_ps(x, t.enc);
    __m256 q = round8(y, g);
    if (const int bad = nonfinite8(y)) q = codec_values8(y, q, t.dec, bad, codec);
    const __m256 v = _mm256_mul_ps(q, t.dec);
    const __m256i vb = _mm256_castps_si256(v);
    low = _mm256_or_si256(low, vb);
    below =
        _mm256_min_epu32(below, _mm256_sub_epi32(_mm256_and_si256(vb, set1(0x7fffffffu)), set1(1)));
    store_bf16(o, v, n);
  };
  // bfloat16 input: 16 lanes a step on the bits themselves where the tiles are plain.
  const auto body16 = [&](std::int64_t r, std::int64_t c, __m256i x, __m256i a, const Tile16& t) {
    const __m256i v =
        _mm256_or_si256(round16(a, shift16, t.top),
                        _mm256_and_si256(x, _mm256_set1_epi16(static_cast<short>(0x8000))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * cols + c), v);
  };
  iterate(body8, sixteen(in, body16));
  __m128i l = _mm_or_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
  l = _mm_or_si128(l, _mm_shuffle_epi32(l, 0x4e));
  l = _mm_or_si128(l, _mm_shuffle_epi32(l, 0xb1));
  const std::uint32_t low_bits = static_cast<std::uint32_t>(_mm_cvtsi128_si32(l)) & 0xffffu;
  const std::uint32_t smallest_less_one =
      0xffffffffu - max_lane(_mm256_xor_si256(below, set1(0xffffffffu)));
  return low_bits == 0 && smallest_less_one >= 0x007fffffu;
}

// The codes pass (band_codes_avx2's contract), iterated as values_with.
template <class Iterate>
void codes_with(const BandRows& in, const BandGrid& g, const ElementCodec& codec, std::uint8_t* out,
                Iterate&& iterate) {
  const std::int64_t cols = in.cols;
  const __m256 plus_zero = _mm256_set1_ps(g.nvfp4 ? 0.0f : -0.0f);  // y + -0 is y
  const int shift16 = g.shift - 16;
  const auto at = [&](std::int64_t r, std::int64_t c) {
    return g.packed ? out + (r * cols + c) / 2 : out + r * cols + c;
  };
  const auto body8 = [&](std::int64_t r, std::int64_t c, std::int64_t n, const Tile8& t) {
    const __m256 x = load8(in, r, c, n);
    __m256i code;
    if (t.plain) {  // the rounded magnitude in the element's scale (exact: a power of two)
      const __m256 q = _mm256_mul_ps(round_plain8(x, g.shift, t.magic, t.top), t.enc);
      code = codes8(_mm256_or_ps(q, sign_of(x)), g);
    } else {
      const __m256 y = _mm256_add_ps(_mm256_mul_ps(x, t.enc), plus_zero);
      code = round_codes8(y, g);
      if (const int bad = nonfinite8(y)) code = codec_codes8(y, code, bad, codec);
      // NaN tiles: codes 0.
      code = _mm256_and_si256(code, _mm256_castps_si256(_mm256_cmp_ps(t.dec, t.dec, _CMP_ORD_Q)));
    }
    store_codes(at(r, c), code, n, g.packed);
  };
  // bfloat16 input: 16 lanes a step on the bits themselves where the tiles are plain; a
  // normal element's code is its rounded bits less the tile's offset, the sign above, zero
  // staying zero.
  const auto body16 = [&](std::int64_t r, std::int64_t c, __m256i x, __m256i a, const Tile16& t) {
    const __m256i magnitude = _mm256_andnot_si256(
        _mm256_cmpeq_epi16(a, _mm256_setzero_si256()),
        _mm256_sub_epi16(_mm256_srli_epi16(round16(a, shift16, t.top), shift16), t.offset));
    const __m256i code =
        _mm256_or_si256(magnitude, _mm256_slli_epi16(_mm256_srli_epi16(x, 15), g.sign_bit));
    store_codes16(at(r, c), code, g.packed);
  };
  iterate(body8, sixteen(in, body16));
}

}  // namespace mantissa::quant::detail::avx2
