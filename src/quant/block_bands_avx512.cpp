// Compiled with -mavx512f -mavx512bw; entered only when numerics::active_simd_path() is avx512
// (block_bands.cpp). 16 elements a step, a row's last partial step under a lane mask; an
// element that scales to an infinity or NaN goes through the codec one lane at a time.
#include "block_bands_avx512.hpp"

#include <immintrin.h>

#include "band_passes_avx512.hpp"

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

namespace mantissa::quant::detail {
namespace {

using namespace band_passes;

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

template <bool kCodec>
ValuesAnswer values_pass(const BandRows& in, const BandScales& s, const BandGrid& g,
                         const ElementCodec& codec, std::uint16_t* out) {
  return values_with<kCodec>(in, g, codec, out, [&](const auto& fast, const auto& half) {
    if (!kCodec && s.lo16 != nullptr) {
      each_pair(in, s, fast, half);
    } else {
      each_vector<true>(in, s, half);
    }
  });
}

template <bool kCodec>
bool codes_pass(const BandRows& in, const BandScales& s, const BandGrid& g,
                const ElementCodec& codec, std::uint8_t* out) {
  return codes_with<kCodec>(in, g, codec, out, [&](const auto& fast, const auto& half) {
    if (!kCodec && s.lo16 != nullptr) {
      each_pair(in, s, fast, half);
    } else {
      each_vector<false>(in, s, half);
    }
  });
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

namespace {

// decode(r, c, lanes, dec): 16 codes of row r from column c decoded through the table and
// times their tiles' multipliers dec, into out (as band_decode_avx512).
class Decode16 {
 public:
  Decode16(const std::uint8_t* codes, std::int64_t cols, const CodeTable& t, std::uint16_t* out)
      : codes(codes), cols(cols), t(t), out(out), table(t) {}

  void operator()(std::int64_t r, std::int64_t c, __mmask16 m, __m512 dec) {
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
    sink.checked(out + r * cols + c, m, _mm512_castps_si512(_mm512_mul_ps(v, dec)));
  }
  bool exact() const { return sink.exact(); }

 private:
  const std::uint8_t* codes;
  std::int64_t cols;
  const CodeTable& t;
  std::uint16_t* out;
  MagnitudeTable table;
  __m512i magnitude_mask = _mm512_set1_epi32((1 << t.sign_bit) - 1);
  Bf16Out sink;
};

// 16 E8M0 fields (32-bit lanes) as their multipliers 2^(f - 127): 2^-127 a float32 subnormal,
// 0xff NaN.
inline __m512 e8m0_multipliers(__m512i f) {
  __m512i d = _mm512_mask_mov_epi32(_mm512_slli_epi32(f, 23),
                                    _mm512_cmpeq_epi32_mask(f, _mm512_setzero_si512()),
                                    _mm512_set1_epi32(0x00400000));
  d = _mm512_mask_mov_epi32(d, _mm512_cmpeq_epi32_mask(f, _mm512_set1_epi32(0xff)),
                            _mm512_set1_epi32(0x7fc00000));
  return _mm512_castsi512_ps(d);
}

}  // namespace

bool band_decode_avx512(const std::uint8_t* codes, std::int64_t cols, std::int64_t r0,
                        std::int64_t r1, const BandScales& s, const CodeTable& t,
                        std::uint16_t* out) {
  Decode16 decode(codes, cols, t, out);
  const BandRows rows{codes, false, cols, r0, r1};
  each_vector<false>(rows, s, [&](std::int64_t r, std::int64_t c, __mmask16 m, const Tile16& tl) {
    decode(r, c, m, tl.dec);
  });
  return decode.exact();
}

bool mx_decode_avx512(const std::uint8_t* codes, const std::uint8_t* scale_codes, std::int64_t cols,
                      bool row_tiles, std::int64_t r0, std::int64_t r1, const CodeTable& t,
                      std::uint16_t* out) {
  Decode16 decode(codes, cols, t, out);
  // The magnitudes' bfloat16 bits (every element value is a bfloat16 value), 128 entries:
  // two two-source word permutes and a blend by bit 6.
  alignas(64) std::uint16_t bits16[128] = {};
  for (int i = 0; i < (1 << t.sign_bit); ++i) {
    std::uint32_t b;
    __builtin_memcpy(&b, t.values + i, 4);
    bits16[i] = static_cast<std::uint16_t>(b >> 16);
  }
  __m512i words[4];
  for (int i = 0; i < 4; ++i) words[i] = _mm512_load_si512(bits16 + 32 * i);
  const __m512i magnitude_mask = _mm512_set1_epi16(static_cast<short>((1 << t.sign_bit) - 1));
  const __m512i exponent = _mm512_set1_epi16(0x7f80);
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t c = 0; c < cols; c += 32) {
      const std::int64_t n = cols - c < 32 ? cols - c : 32;
      const __mmask32 m = lanes32_below(n);
      // The tiles' fields: one for the 32 lanes (1 x 32), or one a lane (32 x 1).
      const __m512i f =
          row_tiles ? _mm512_set1_epi16(static_cast<short>(scale_codes[(r * cols + c) / 32]))
                    : _mm512_cvtepu8_epi16(_mm512_castsi512_si256(
                          _mm512_maskz_loadu_epi8(m, scale_codes + r / 32 * cols + c)));
      const __m512i code = _mm512_cvtepu8_epi16(
          _mm512_castsi512_si256(_mm512_maskz_loadu_epi8(m, codes + r * cols + c)));
      const __m512i magnitude = _mm512_and_si512(code, magnitude_mask);
      const __m512i v =
          _mm512_mask_blend_epi16(_mm512_test_epi16_mask(magnitude, _mm512_set1_epi16(64)),
                                  _mm512_permutex2var_epi16(words[0], magnitude, words[1]),
                                  _mm512_permutex2var_epi16(words[2], magnitude, words[3]));
      // 2^k with |k| <= 100 (fields 27..227) keeps every value normal: its bits plus k in the
      // exponent. Other tiles, and infinities or NaNs, take the multipliers.
      const __mmask32 plain = _mm512_cmpge_epu16_mask(f, _mm512_set1_epi16(27)) &
                              _mm512_cmple_epu16_mask(f, _mm512_set1_epi16(227)) &
                              _mm512_cmpneq_epi16_mask(_mm512_and_si512(v, exponent), exponent);
      if ((m & ~plain) != 0) {
        const __m512i f0 = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(f));
        const __m512i f1 = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(f, 1));
        decode(r, c, lanes_below(n), e8m0_multipliers(f0));
        if (n > 16) decode(r, c + 16, lanes_below(n - 16), e8m0_multipliers(f1));
        continue;
      }
      const __m512i k = _mm512_slli_epi16(_mm512_sub_epi16(f, _mm512_set1_epi16(127)), 7);
      const __m512i scaled =
          _mm512_mask_add_epi16(v, _mm512_test_epi16_mask(magnitude, magnitude), v, k);
      const __m512i sign =
          _mm512_slli_epi16(_mm512_srli_epi16(code, static_cast<unsigned>(t.sign_bit)), 15);
      _mm512_mask_storeu_epi16(out + r * cols + c, m, _mm512_or_si512(scaled, sign));
    }
  }
  return decode.exact();
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

}  // namespace mantissa::quant::detail
