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

// 8 finite y rounded to the grid: normal magnitudes keep m mantissa bits (nearest-even on the
// bits), smaller ones round to multiples of the subnormal spacing by one float add; then
// saturated at max; the sign kept.
inline __m256 round8(__m256 y, const detail::BandGrid& g) {
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256 a = _mm256_andnot_ps(sign_mask, y);
  const int shift = 23 - g.mantissa_bits;
  const V b = _mm256_castps_si256(a);
  const V lsb = _mm256_and_si256(_mm256_srli_epi32(b, shift), _mm256_set1_epi32(1));
  const V rounded = _mm256_and_si256(
      _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32((1 << (shift - 1)) - 1), lsb)),
      _mm256_set1_epi32(static_cast<int>(~((1u << shift) - 1u))));
  const __m256 magic = _mm256_set1_ps(g.subnormal_magic);
  const __m256 small = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
  __m256 r = _mm256_blendv_ps(_mm256_castsi256_ps(rounded), small,
                              _mm256_cmp_ps(a, _mm256_set1_ps(g.min_normal), _CMP_LT_OQ));
  r = _mm256_min_ps(r, _mm256_set1_ps(g.max));
  return _mm256_or_ps(r, _mm256_and_ps(y, sign_mask));
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
          detail::quantize_to_bf16_avx512(x, x_format, rows, cols, spec, out)) {
    return *fast;
  }
  const numerics::TileShape tile = std::visit([](const auto& s) { return s.tile; }, spec);
  const detail::BandGrid grid = detail::grid_of(detail::element_of(spec));
  const detail::ElementCodec codec = detail::codec_of(detail::element_of(spec));
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
        std::vector<std::uint32_t> absrow(enc.size());
        std::uint32_t bad = 0;
        for (std::int64_t band = b0; band < b1; ++band) {
          const std::int64_t r0 = band * band_rows, r1 = std::min(rows, r0 + band_rows);
          std::fill(amax.begin(), amax.end(), 0u);
          for (std::int64_t r = r0; r < r1; ++r) {
            const void* row = base + static_cast<std::size_t>(r * cols) * elem;
            std::int64_t c = 0;
            for (; c + 8 <= cols; c += 8) {
              _mm256_storeu_si256(reinterpret_cast<V*>(absrow.data() + c),
                                  _mm256_and_si256(_mm256_castps_si256(load8(row, x_format, c)),
                                                   _mm256_set1_epi32(0x7fffffff)));
            }
            for (; c < cols; ++c) {
              absrow[static_cast<std::size_t>(c)] =
                  std::bit_cast<std::uint32_t>(load1(row, x_format, c)) & 0x7fffffffu;
            }
            if (tile.cols == 1) {  // column-wise tiles: one amax per column
              for (std::int64_t j = 0; j < cols; ++j) {
                amax[static_cast<std::size_t>(j)] = std::max(amax[static_cast<std::size_t>(j)],
                                                             absrow[static_cast<std::size_t>(j)]);
              }
              continue;
            }
            for (std::int64_t t = 0; t < grid_cols; ++t) {
              const std::int64_t c0 = t * tile.cols, c1 = std::min(cols, c0 + tile.cols);
              std::uint32_t m = amax[static_cast<std::size_t>(t)];
              for (std::int64_t j = c0; j < c1; ++j)
                m = std::max(m, absrow[static_cast<std::size_t>(j)]);
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
              const __m256 y =
                  _mm256_mul_ps(load8(row, x_format, c), _mm256_loadu_ps(enc.data() + c));
              const V yb = _mm256_castps_si256(y);
              const V nonfinite =
                  _mm256_cmpgt_epi32(_mm256_and_si256(yb, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f7fffff));
              __m256 r8;
              if (_mm256_testz_si256(nonfinite, nonfinite)) {
                r8 = round8(y, grid);
              } else {  // an infinity or NaN: the codec, one element at a time
                alignas(32) float lanes[8];
                _mm256_store_ps(lanes, y);
                for (int i = 0; i < 8; ++i) {  // a NaN tile scale: element codes 0
                  lanes[i] = std::isnan(dec[static_cast<std::size_t>(c + i)])
                                 ? 0.0f
                                 : codec.value(codec.ctx, lanes[i]);
                }
                r8 = _mm256_load_ps(lanes);
              }
              const V v = _mm256_castps_si256(_mm256_mul_ps(r8, _mm256_loadu_ps(dec.data() + c)));
              // Exact in bfloat16: the low half zero and no float32 subnormal.
              const V low = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
              const V mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7fffffff));
              const V sub =
                  _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, _mm256_setzero_si256()),
                                      _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), mag));
              const V wrong = _mm256_or_si256(low, sub);
              bad |= _mm256_testz_si256(wrong, wrong) ? 0u : 1u;
              const V hi = _mm256_srli_epi32(v, 16);
              _mm_storeu_si128(
                  reinterpret_cast<__m128i*>(o + c),
                  _mm_packus_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1)));
            }
            for (; c < cols; ++c) {
              const float d = dec[static_cast<std::size_t>(c)];
              const float v =
                  (std::isnan(d) ? 0.0f
                                 : codec.value(codec.ctx, load1(row, x_format, c) *
                                                              enc[static_cast<std::size_t>(c)])) *
                  d;
              const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
              const std::uint32_t mag = b & 0x7fffffffu;
              bad |= ((b & 0xffffu) != 0 || (mag != 0 && mag < 0x00800000u)) ? 1u : 0u;
              o[c] = static_cast<std::uint16_t>(b >> 16);
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
