// The block quantizers' band bodies on AVX2 (block_bands_avx2.hpp), for CPUs whose best path
// it is: 8 lanes a step, a tile's constants broadcast once per tile (or loaded per column for
// one-column tiles). A plain tile (BandScales: finite amax, a power-of-two scale within
// 2^-100..2^100) is rounded in x's own scale by one add and one subtract (round_plain8): no
// multiplier for the values, its results bfloat16 values by construction; any other tile
// scales first, rounds in the element's scale, and sends infinities and NaNs to the codec.
#include "block_bands_avx2.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "band_passes_avx2.hpp"

namespace mantissa::quant::detail {
namespace {

using namespace avx2;  // band_passes_avx2.hpp

// A per-column array's lanes [c, c + n), the last column's value repeated past n.
inline __m256 columns8(const float* v, std::int64_t c, std::int64_t n) {
  if (n == 8) return _mm256_loadu_ps(v + c);
  alignas(32) float b[8];
  for (std::int64_t k = 0; k < 8; ++k) b[k] = v[c + std::min(k, n - 1)];
  return _mm256_load_ps(b);
}

// body(c, n, tile) over a row's columns [c0, c1) in steps of 8 with their tiles' constants:
// per column for one-column tiles, else per tile (a multiple of 16 wide, and c0 a multiple
// of 8: no step straddles two).
template <class Body>
void over_row(const BandScales& s, std::int64_t c0, std::int64_t c1, float top_limit, Body&& body) {
  if (s.tile_cols == 1) {
    for (std::int64_t c = c0; c < c1; c += 8) {
      const std::int64_t n = std::min<std::int64_t>(8, c1 - c);
      const __m256 lo = columns8(s.lo, c, n), top = columns8(s.top, c, n);
      const __m256 declined =
          _mm256_or_ps(_mm256_cmp_ps(lo, lo, _CMP_UNORD_Q),
                       _mm256_cmp_ps(top, _mm256_set1_ps(top_limit), _CMP_NLT_UQ));
      body(c, n,
           Tile8{columns8(s.encode, c, n), columns8(s.decode, c, n), columns8(s.magic, c, n), top,
                 _mm256_movemask_ps(declined) == 0});
    }
    return;
  }
  for (std::int64_t c = c0; c < c1;) {
    const std::int64_t t = c / s.tile_cols;
    const Tile8 k{_mm256_set1_ps(s.encode[t]), _mm256_set1_ps(s.decode[t]),
                  _mm256_set1_ps(s.magic[t]), _mm256_set1_ps(s.top[t]),
                  !std::isnan(s.lo[t]) && s.top[t] < top_limit};
    const std::int64_t end = std::min(c1, (t + 1) * s.tile_cols);
    for (; c < end; c += 8) body(c, std::min<std::int64_t>(8, end - c), k);
  }
}

inline __m256i columns16(const std::uint16_t* v, std::int64_t c) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + c));
}

// body16(c, tile) over the row's whole steps of 16 bfloat16 lanes, then body8(c, n, tile)
// over the rest in steps of 8 (as over_row); body16 answers false, storing nothing, where it
// declines its lanes, which then go to body8 as two steps of 8.
template <class Body16, class Body8>
void over_row16(const BandScales& s, std::int64_t cols, float top_limit, Body16&& body16,
                Body8&& body8) {
  const auto eight = [&](std::int64_t c, std::int64_t n) {
    over_row(s, c, c + n, top_limit, body8);
  };
  std::int64_t c = 0;
  if (s.tile_cols == 1) {
    for (; c + 16 <= cols; c += 16) {
      if (!body16(c,
                  Tile16{columns16(s.lo16, c), columns16(s.top16, c), columns16(s.offset16, c)})) {
        eight(c, 16);
      }
    }
  } else {
    for (std::int64_t t = 0; c + s.tile_cols <= cols; ++t) {
      const Tile16 k{_mm256_set1_epi16(static_cast<short>(s.lo16[t])),
                     _mm256_set1_epi16(static_cast<short>(s.top16[t])),
                     _mm256_set1_epi16(static_cast<short>(s.offset16[t]))};
      const bool plain = s.lo16[t] != 0xffffu;
      for (const std::int64_t c1 = c + s.tile_cols; c < c1; c += 16) {
        if (!plain || !body16(c, k)) eight(c, 16);
      }
    }
  }
  if (c < cols) eight(c, cols - c);
}

// Over the band's rows: body8(r, c, n, tile) for steps of 8 lanes; for bfloat16 input with
// the 16-bit thresholds, sixteen(r, c, tile) first for steps of 16 lanes (band_passes_avx2.hpp),
// its declined steps to body8.
template <class Body8, class Sixteen>
void over_band(const BandRows& in, const BandScales& s, const BandGrid& g, const Body8& body8,
               const Sixteen& sixteen) {
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    const auto eight = [&](std::int64_t c, std::int64_t n, const Tile8& t) { body8(r, c, n, t); };
    if (s.lo16 == nullptr) {
      over_row(s, 0, in.cols, top_limit(g), eight);
      continue;
    }
    over_row16(
        s, in.cols, top_limit(g), [&](std::int64_t c, const Tile16& t) { return sixteen(r, c, t); },
        eight);
  }
}

// The largest of 16 unsigned 16-bit lanes: halves folded, then the SSE4.1 minimum-position
// search on the complements.
inline std::uint32_t max_lane16(__m256i v) {
  const __m128i q = _mm_max_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i ones = _mm_set1_epi32(-1);
  return 0xffffu ^
         (static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(q, ones)))) &
          0xffffu);
}

// |x| of row r's columns [c0, c1) as float32 bits: their largest.
std::uint32_t span_amax(const BandRows& in, std::int64_t r, std::int64_t c0, std::int64_t c1) {
  const std::int64_t i = r * in.cols;
  std::int64_t c = c0;
  std::uint32_t m = 0;
  if (in.bf16) {  // 16 lanes a step on the 16-bit magnitudes
    const auto* x16 = static_cast<const std::uint16_t*>(in.x) + i;
    __m256i v = _mm256_setzero_si256();
    for (; c + 16 <= c1; c += 16) {
      v = _mm256_max_epu16(
          v, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x16 + c)),
                              _mm256_set1_epi16(0x7fff)));
    }
    m = max_lane16(v);
    for (; c < c1; ++c) m = std::max<std::uint32_t>(m, x16[c] & 0x7fffu);
    return m << 16;
  }
  const auto* x32 = static_cast<const float*>(in.x) + i;
  __m256i v = _mm256_setzero_si256();
  for (; c + 8 <= c1; c += 8) {
    v = _mm256_max_epu32(
        v, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x32 + c)), set1(0x7fffffffu)));
  }
  m = max_lane(v);
  for (; c < c1; ++c) {
    std::uint32_t b = 0;
    std::memcpy(&b, x32 + c, sizeof(b));
    m = std::max(m, b & 0x7fffffffu);
  }
  return m;
}

}  // namespace

void band_amax_avx2(const BandRows& in, std::int64_t tile_cols, std::uint32_t* amax,
                    std::uint16_t* scratch) {
  const std::int64_t cols = in.cols;
  if (tile_cols == 1 && in.bf16 && scratch != nullptr) {
    // One-column tiles of bfloat16: the band's column maxima in 16-bit lanes, then folded.
    const auto* x16 = static_cast<const std::uint16_t*>(in.x);
    std::fill(scratch, scratch + cols, std::uint16_t{0});
    const std::int64_t whole = cols / 16 * 16;
    for (std::int64_t r = in.r0; r < in.r1; ++r) {
      const std::uint16_t* row = x16 + r * cols;
      for (std::int64_t c = 0; c < whole; c += 16) {
        auto* m = reinterpret_cast<__m256i*>(scratch + c);
        const __m256i a =
            _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c)),
                             _mm256_set1_epi16(0x7fff));
        _mm256_storeu_si256(m, _mm256_max_epu16(_mm256_loadu_si256(m), a));
      }
      for (std::int64_t c = whole; c < cols; ++c) {
        scratch[c] = std::max<std::uint16_t>(scratch[c], row[c] & 0x7fffu);
      }
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      amax[c] = std::max(amax[c], static_cast<std::uint32_t>(scratch[c]) << 16);
    }
    return;
  }
  for (std::int64_t r = in.r0; r < in.r1; ++r) {
    if (tile_cols != 1) {
      std::int64_t t = 0;
      if (tile_cols == 32 && in.bf16) {  // eight tiles at once
        const std::uint16_t* row = static_cast<const std::uint16_t*>(in.x) + r * cols;
        for (; (t + 8) * 32 <= cols; t += 8) {
          auto* m = reinterpret_cast<__m256i*>(amax + t);
          _mm256_storeu_si256(m,
                              _mm256_max_epu32(_mm256_loadu_si256(m), tile_maxima8(row + t * 32)));
        }
      }
      for (std::int64_t c0 = t * tile_cols; c0 < cols; ++t, c0 += tile_cols) {
        amax[t] = std::max(amax[t], span_amax(in, r, c0, std::min(cols, c0 + tile_cols)));
      }
      continue;
    }
    std::int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      auto* m = reinterpret_cast<__m256i*>(amax + c);
      const __m256i a =
          _mm256_and_si256(_mm256_castps_si256(load8(in, r, c, 8)), set1(0x7fffffffu));
      _mm256_storeu_si256(m, _mm256_max_epu32(_mm256_loadu_si256(m), a));
    }
    for (; c < cols; ++c) amax[c] = std::max(amax[c], span_amax(in, r, c, c + 1));
  }
}

bool band_values_avx2(const BandRows& in, const BandScales& s, const BandGrid& g,
                      const ElementCodec& codec, std::uint16_t* out) {
  return avx2::values_with(in, g, codec, out, [&](const auto& body8, const auto& sixteen) {
    over_band(in, s, g, body8, sixteen);
  });
}

void band_codes_avx2(const BandRows& in, const BandScales& s, const BandGrid& g,
                     const ElementCodec& codec, std::uint8_t* out) {
  avx2::codes_with(in, g, codec, out, [&](const auto& body8, const auto& sixteen) {
    over_band(in, s, g, body8, sixteen);
  });
}

namespace {

// One element decoded with its tile's E8M0 field f into bfloat16 bits; false where the value
// is not a bfloat16 value (a float32 subnormal).
inline bool decode1(std::uint8_t code, std::uint32_t f, const CodeTable& t, std::uint16_t& o) {
  const std::uint32_t scale_bits = f == 0xff ? 0x7fc00000u : f == 0 ? 0x00400000u : f << 23;
  float scale = 0;
  std::memcpy(&scale, &scale_bits, sizeof(scale));
  const float v = t.values[code] * scale;
  std::uint32_t b = 0;
  std::memcpy(&b, &v, sizeof(b));
  o = static_cast<std::uint16_t>(b >> 16);
  const std::uint32_t e = b & 0x7f800000u;
  return (b & 0xffffu) == 0 && (e != 0 || (b & 0x7fffffffu) == 0);
}

}  // namespace

bool mx_decode_avx2(const std::uint8_t* codes, const std::uint8_t* scale_codes, std::int64_t cols,
                    bool row_tiles, std::int64_t r0, std::int64_t r1, const CodeTable& t,
                    int mantissa_bits, std::uint16_t* out) {
  // The bfloat16 bits of the magnitudes below 2^m (zero and the subnormals), low and high
  // bytes, for a byte shuffle; a normal magnitude's bits are its own shifted into place with
  // the bias moved.
  alignas(32) std::uint8_t lo_bytes[32] = {}, hi_bytes[32] = {};
  for (int i = 0; i < (1 << mantissa_bits) && i < 16; ++i) {
    std::uint32_t b = 0;
    std::memcpy(&b, t.values + i, sizeof(b));
    lo_bytes[i] = lo_bytes[i + 16] = static_cast<std::uint8_t>(b >> 16);
    hi_bytes[i] = hi_bytes[i + 16] = static_cast<std::uint8_t>(b >> 24);
  }
  const __m256i lo_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo_bytes));
  const __m256i hi_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi_bytes));
  // The smallest magnitude that is an infinity or NaN (none in fp6: above every code).
  int special = 0x7fff;
  for (int i = (1 << t.sign_bit) - 1; i > 0; --i) {
    if (std::isnan(t.values[i]) || std::isinf(t.values[i])) special = i;
  }
  std::uint32_t one_bits = 0;  // the element bias from 1.0's code: (127 - bias) << 7 moved
  for (int i = 0; i < (1 << t.sign_bit); ++i) {
    if (t.values[i] == 1.0f) one_bits = static_cast<std::uint32_t>(i);
  }
  const auto shift = static_cast<unsigned>(7 - mantissa_bits);
  const __m256i bias = _mm256_set1_epi16(static_cast<short>(0x3f80 - (one_bits << shift)));
  const __m256i magnitude_mask = _mm256_set1_epi16(static_cast<short>((1 << t.sign_bit) - 1));
  const __m256i subnormal_end = _mm256_set1_epi16(static_cast<short>(1 << mantissa_bits));
  bool exact = true;
  for (std::int64_t r = r0; r < r1; ++r) {
    std::uint16_t* o = out + r * cols;
    const std::uint8_t* row = codes + r * cols;
    const std::uint8_t* fields =
        row_tiles ? scale_codes + r * cols / 32 : scale_codes + r / 32 * cols;
    std::int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
      const __m256i f =
          row_tiles
              ? _mm256_set1_epi16(static_cast<short>(fields[c / 32]))
              : _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(fields + c)));
      const __m256i code =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)));
      const __m256i magnitude = _mm256_and_si256(code, magnitude_mask);
      // 2^k with |k| <= 100 (fields 27..227) keeps every value normal; infinities and NaNs
      // and other tiles go element by element.
      const __m256i declined = _mm256_or_si256(
          _mm256_or_si256(_mm256_cmpgt_epi16(_mm256_set1_epi16(27), f),
                          _mm256_cmpgt_epi16(f, _mm256_set1_epi16(227))),
          _mm256_cmpgt_epi16(magnitude, _mm256_set1_epi16(static_cast<short>(special - 1))));
      if (!_mm256_testz_si256(declined, declined)) {
        for (std::int64_t i = c; i < c + 16; ++i) {
          exact &= decode1(row[i], row_tiles ? fields[i / 32] : fields[i], t, o[i]);
        }
        continue;
      }
      const __m256i normal = _mm256_add_epi16(_mm256_slli_epi16(magnitude, shift), bias);
      const __m256i small = _mm256_or_si256(
          _mm256_and_si256(_mm256_shuffle_epi8(lo_table, magnitude), _mm256_set1_epi16(0x00ff)),
          _mm256_slli_epi16(_mm256_shuffle_epi8(hi_table, magnitude), 8));
      const __m256i v =
          _mm256_blendv_epi8(normal, small, _mm256_cmpgt_epi16(subnormal_end, magnitude));
      const __m256i k = _mm256_slli_epi16(_mm256_sub_epi16(f, _mm256_set1_epi16(127)), 7);
      const __m256i scaled = _mm256_add_epi16(
          v, _mm256_andnot_si256(_mm256_cmpeq_epi16(magnitude, _mm256_setzero_si256()), k));
      const __m256i sign = _mm256_slli_epi16(_mm256_srli_epi16(code, t.sign_bit), 15);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + c), _mm256_or_si256(scaled, sign));
    }
    for (; c < cols; ++c) {
      exact &= decode1(row[c], row_tiles ? fields[c / 32] : fields[c], t, o[c]);
    }
  }
  return exact;
}

}  // namespace mantissa::quant::detail
