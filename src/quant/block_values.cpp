// quantize_to_bf16 (block_operand.hpp): a power-of-two-scaled operand's values straight from
// the high-precision matrix, without element codes: per tile the scale the quantizer finds,
// then per element y = x * encode (exact: a power of two), y rounded to the element format
// (nearest-even, saturating) in float32 bit arithmetic, times the decode scale, as bfloat16.
// The same bits as quantize_packed followed by dequantize_to_bf16 (the twin).
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "band_grid_avx2.hpp"
#include "block_bands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/quant/block_operand.hpp"

namespace mantissa::quant {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

using V = __m256i;

// Loads 8 elements of a float32 or bfloat16 row as float32.
inline __m256 load8(const void* row, Format f, std::int64_t c) {
  if (f == Format::float32) return _mm256_loadu_ps(static_cast<const float*>(row) + c);
  const __m128i h =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(row) + c));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float load1(const void* row, Format f, std::int64_t c) {
  if (f == Format::float32) return static_cast<const float*>(row)[c];
  return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(row)[c])
                              << 16);
}

// |x| as float32 bits (the amax's order: a NaN above infinity above every finite value).
inline V abs_bits8(const void* row, Format f, std::int64_t c) {
  return _mm256_and_si256(_mm256_castps_si256(load8(row, f, c)), _mm256_set1_epi32(0x7fffffff));
}
inline std::uint32_t abs_bits1(const void* row, Format f, std::int64_t c) {
  return std::bit_cast<std::uint32_t>(load1(row, f, c)) & 0x7fffffffu;
}
// The largest of 8 unsigned lanes.
inline std::uint32_t max_lane(V v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4e));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xb1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(m));
}

// One element format's rounding, for values8 and value1.
struct Rounder {
  detail::BandGrid grid;
  detail::ElementCodec codec;
};

// 8 elements x as bfloat16 values: y = x * encode rounded to the element grid, times decode
// (a NaN decode scale: 0). Sets `bad` where a result is not exactly a bfloat16 value.
inline void values8(__m256 x, __m256 encode, __m256 decode, const Rounder& rd, std::uint16_t* o,
                    std::uint32_t& bad) {
  const __m256 y = _mm256_mul_ps(x, encode);
  const V yb = _mm256_castps_si256(y);
  const V nonfinite = _mm256_cmpgt_epi32(_mm256_and_si256(yb, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f7fffff));
  __m256 r8;
  if (_mm256_testz_si256(nonfinite, nonfinite)) {
    r8 = detail::avx2::round8(y, rd.grid);
  } else {  // an infinity or NaN: the codec, one element at a time
    alignas(32) float lanes[8], d[8];
    _mm256_store_ps(lanes, y);
    _mm256_store_ps(d, decode);
    for (int i = 0; i < 8; ++i) {  // a NaN tile scale: element codes 0
      lanes[i] = std::isnan(d[i]) ? 0.0f : rd.codec.value(rd.codec.ctx, lanes[i]);
    }
    r8 = _mm256_load_ps(lanes);
  }
  const V v = _mm256_castps_si256(_mm256_mul_ps(r8, decode));
  // Exact in bfloat16: the low half zero and no float32 subnormal.
  const V low = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
  const V mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7fffffff));
  const V sub = _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, _mm256_setzero_si256()),
                                    _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), mag));
  const V wrong = _mm256_or_si256(low, sub);
  bad |= _mm256_testz_si256(wrong, wrong) ? 0u : 1u;
  const V hi = _mm256_srli_epi32(v, 16);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o),
                   _mm_packus_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1)));
}

// One element, as values8 does it.
inline std::uint16_t value1(float x, float encode, float decode, const Rounder& rd,
                            std::uint32_t& bad) {
  const float v = (std::isnan(decode) ? 0.0f : rd.codec.value(rd.codec.ctx, x * encode)) * decode;
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t mag = b & 0x7fffffffu;
  bad |= ((b & 0xffffu) != 0 || (mag != 0 && mag < 0x00800000u)) ? 1u : 0u;
  return static_cast<std::uint16_t>(b >> 16);
}

// Row tiles (1 x k): each tile's amax, scale and values in one pass over its elements, which
// stay in the L1 cache between the two reads.
void row_tiles(const void* row, Format f, std::int64_t cols, std::int64_t k, const BlockSpec& spec,
               const Rounder& rd, std::uint16_t* o, std::uint32_t& bad) {
  for (std::int64_t c0 = 0; c0 < cols; c0 += k) {
    const std::int64_t c1 = std::min(cols, c0 + k);
    V mv = _mm256_setzero_si256();
    std::int64_t j = c0;
    for (; j + 8 <= c1; j += 8) mv = _mm256_max_epu32(mv, abs_bits8(row, f, j));
    std::uint32_t m = max_lane(mv);
    for (; j < c1; ++j) m = std::max(m, abs_bits1(row, f, j));
    const detail::TileMultipliers s = detail::tile_multipliers(spec, std::bit_cast<float>(m));
    const __m256 encode = _mm256_set1_ps(s.encode), decode = _mm256_set1_ps(s.decode);
    for (j = c0; j + 8 <= c1; j += 8) values8(load8(row, f, j), encode, decode, rd, o + j, bad);
    for (; j < c1; ++j) o[j] = value1(load1(row, f, j), s.encode, s.decode, rd, bad);
  }
}

}  // namespace

bool quantize_to_bf16_takes(const BlockSpec& spec) {
  if (!detail::valid_settings(spec)) return false;
  if (const auto* mx = std::get_if<numerics::MxSettings>(&spec)) {
    return mx->rounding == numerics::Rounding::nearest_even;
  }
  if (const auto* f = std::get_if<numerics::Fp8BlockSettings>(&spec)) {
    return f->power_of_two && f->rounding == numerics::Rounding::nearest_even;
  }
  return false;
}

bool quantize_to_bf16(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                      const BlockSpec& spec, std::uint16_t* out) {
  check_sizes("quantize_to_bf16", rows, cols);
  if (!quantize_to_bf16_takes(spec) ||
      (x_format != Format::float32 && x_format != Format::bfloat16)) {
    throw Error(
        "quantize_to_bf16: takes MX or power-of-two fp8 blocks with nearest-even "
        "rounding, valid tiles and element formats, float32 or bfloat16 input (got " +
        std::string(numerics::name(x_format)) + " input)");
  }
  if (const std::optional<bool> fast =
          detail::quantize_to_bf16_bands(x, x_format, rows, cols, spec, out)) {
    return *fast;
  }
  const numerics::TileShape tile = std::visit([](const auto& s) { return s.tile; }, spec);
  const Rounder rd{detail::grid_of(detail::element_of(spec)),
                   detail::codec_of(detail::element_of(spec))};
  const std::int64_t band_rows = std::min<std::int64_t>(tile.rows, std::max<std::int64_t>(rows, 1));
  const std::int64_t bands = rows > 0 ? (rows + band_rows - 1) / band_rows : 0;
  const std::int64_t grid_cols = (cols + tile.cols - 1) / tile.cols;
  const std::size_t elem = x_format == Format::float32 ? 4 : 2;
  const auto* base = static_cast<const std::uint8_t*>(x);
  std::uint32_t bad_any = 0;
  parallel_chunks(
      bands,
      [&](std::int64_t b0, std::int64_t b1) {
        std::vector<std::uint32_t> amax(static_cast<std::size_t>(grid_cols));
        std::vector<float> enc(static_cast<std::size_t>(cols)), dec(enc.size());
        std::uint32_t bad = 0;
        for (std::int64_t band = b0; band < b1; ++band) {
          const std::int64_t r0 = band * band_rows, r1 = std::min(rows, r0 + band_rows);
          if (tile.rows == 1) {
            row_tiles(base + static_cast<std::size_t>(r0 * cols) * elem, x_format, cols, tile.cols,
                      spec, rd, out + r0 * cols, bad);
            continue;
          }
          std::fill(amax.begin(), amax.end(), 0u);
          for (std::int64_t r = r0; r < r1; ++r) {
            const void* row = base + static_cast<std::size_t>(r * cols) * elem;
            if (tile.cols == 1) {  // column-wise tiles: one amax per column, 8 at a time
              std::int64_t c = 0;
              for (; c + 8 <= cols; c += 8) {
                V* m = reinterpret_cast<V*>(amax.data() + c);
                _mm256_storeu_si256(
                    m, _mm256_max_epu32(_mm256_loadu_si256(m), abs_bits8(row, x_format, c)));
              }
              for (; c < cols; ++c) {
                amax[static_cast<std::size_t>(c)] =
                    std::max(amax[static_cast<std::size_t>(c)], abs_bits1(row, x_format, c));
              }
              continue;
            }
            for (std::int64_t t = 0; t < grid_cols; ++t) {
              const std::int64_t c0 = t * tile.cols, c1 = std::min(cols, c0 + tile.cols);
              V mv = _mm256_setzero_si256();
              std::int64_t j = c0;
              for (; j + 8 <= c1; j += 8) mv = _mm256_max_epu32(mv, abs_bits8(row, x_format, j));
              std::uint32_t m = std::max(amax[static_cast<std::size_t>(t)], max_lane(mv));
              for (; j < c1; ++j) m = std::max(m, abs_bits1(row, x_format, j));
              amax[static_cast<std::size_t>(t)] = m;
            }
          }
          for (std::int64_t t = 0; t < grid_cols; ++t) {
            const detail::TileMultipliers s = detail::tile_multipliers(
                spec, std::bit_cast<float>(amax[static_cast<std::size_t>(t)]));
            const std::int64_t c0 = t * tile.cols, c1 = std::min(cols, c0 + tile.cols);
            std::fill(enc.begin() + c0, enc.begin() + c1, s.encode);
            std::fill(dec.begin() + c0, dec.begin() + c1, s.decode);
          }
          for (std::int64_t r = r0; r < r1; ++r) {
            const void* row = base + static_cast<std::size_t>(r * cols) * elem;
            std::uint16_t* o = out + r * cols;
            std::int64_t c = 0;
            for (; c + 8 <= cols; c += 8) {
              values8(load8(row, x_format, c), _mm256_loadu_ps(enc.data() + c),
                      _mm256_loadu_ps(dec.data() + c), rd, o + c, bad);
            }
            for (; c < cols; ++c) {
              o[c] = value1(load1(row, x_format, c), enc[static_cast<std::size_t>(c)],
                            dec[static_cast<std::size_t>(c)], rd, bad);
            }
          }
        }
        if (bad != 0) {
#pragma omp atomic write
          bad_any = 1u;
        }
      },
      std::max<std::int64_t>(1, kParallelMinElements / std::max<std::int64_t>(band_rows * cols, 1)),
      1);
  return bad_any == 0;
}

}  // namespace mantissa::quant
