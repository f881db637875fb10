// Compiled with -mavx512f -mavx512bw -mavx512bf16; entered only after bf16_pairs_available().
#include "bf16_pairs_avx512.hpp"
#include "bf16_lanes_avx512.hpp"

#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include <algorithm>
#include <array>

namespace mantissa::kernels::detail {
namespace {

constexpr int kRows = 6;     // rows of c per tile
constexpr int kVectors = 4;  // 16-column vectors per tile: 64 columns

__mmask16 column_mask(std::int64_t left) {
  return left >= 16  ? static_cast<__mmask16>(0xFFFF)
         : left <= 0 ? static_cast<__mmask16>(0)
                     : static_cast<__mmask16>((1u << left) - 1u);
}

// Rows [i, i + R) x columns [j, j + 16 V) (masked to n), pairs [p0, p1): R x V accumulators,
// one dot instruction per row, vector and pair.
template <int R, int V>
void tile(std::int64_t i, std::int64_t j, std::int64_t n, std::int64_t p0, std::int64_t p1,
          const PairRows& a, const PairCols& b, float* c, std::int64_t ldc, bool accumulate) {
  __mmask16 mask[V];
  for (int v = 0; v < V; ++v) mask[v] = column_mask(n - j - 16 * v);
  __m512 acc[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      acc[r][v] = accumulate ? _mm512_maskz_loadu_ps(mask[v], c + (i + r) * ldc + j + 16 * v)
                             : _mm512_setzero_ps();
    }
  }
  const std::uint32_t* arow = a.data + i * a.row_stride;
  const std::uint32_t* bp = b.data + p0 * b.ld + j;
  for (std::int64_t p = p0; p < p1; ++p) {
    __m512bh bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      bv[v] = (__m512bh)_mm512_maskz_loadu_epi32(mask[v], bp + 16 * v);
    }
    const std::uint32_t* ap = arow + p * a.pair_stride;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r * a.row_stride]));
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
    bp += b.ld;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      _mm512_mask_storeu_ps(c + (i + r) * ldc + j + 16 * v, mask[v], acc[r][v]);
    }
  }
}

// 16 bf16 values (masked) zero-extended to 32-bit lanes.
__m512i widen(__mmask16 m, const std::uint16_t* x) {
  const __m512i v = _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), x);
  return _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v));
}

using TileFn = void (*)(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                        const PairRows&, const PairCols&, float*, std::int64_t, bool);
template <int R>
constexpr std::array<TileFn, kVectors + 1> kTileWidths = {nullptr, tile<R, 1>, tile<R, 2>,
                                                          tile<R, 3>, tile<R, 4>};
// kTiles[R][V]: R rows of V vectors.
constexpr std::array<std::array<TileFn, kVectors + 1>, kRows + 1> kTiles = {{{},
                                                                             kTileWidths<1>,
                                                                             kTileWidths<2>,
                                                                             kTileWidths<3>,
                                                                             kTileWidths<4>,
                                                                             kTileWidths<5>,
                                                                             kTileWidths<6>}};

}  // namespace

void bf16_pair_product_avx512(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                              PairCols b, float* c, std::int64_t ldc, bool accumulate,
                              PairBand band) {
  for (std::int64_t j = 0; j < n; j += 16 * kVectors) {
    for (std::int64_t i = 0; i < m; i += kRows) {
      const auto rows = static_cast<int>(std::min<std::int64_t>(kRows, m - i));
      const PairRange r = band_range(band, i, rows, n, pairs);
      if (r.end <= j) continue;  // columns_below: nothing of this strip is needed
      // Whole vectors of the strip the rows need (a masked vector still costs its dots).
      const auto vectors =
          static_cast<int>(std::min<std::int64_t>(kVectors, (r.end - j + 15) / 16));
      kTiles[static_cast<std::size_t>(rows)][static_cast<std::size_t>(vectors)](
          i, j, r.end, r.first, r.last, a, b, c, ldc, accumulate);
    }
  }
}

void to_bf16_rows_avx512(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                         std::uint16_t* out, std::int64_t ldo) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    std::uint16_t* o = out + r * ldo;
    std::int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + c),
                          bf16_words_by_unit(_mm512_loadu_ps(xr + c)));
    }
    if (c < n) {
      const __mmask16 m = column_mask(n - c);
      store_bf16_lanes(o + c, m, bf16_lanes(_mm512_maskz_loadu_ps(m, xr + c)));
    }
    if (n % 2 != 0) o[n] = 0;
  }
}

void interleave_row_pairs_avx512(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                                 std::int64_t ldx, std::uint32_t* out, std::int64_t ldo) {
  for (std::int64_t p = 0; 2 * p < rows; ++p) {
    const std::uint16_t* lo = x + 2 * p * ldx;
    const std::uint16_t* hi = 2 * p + 1 < rows ? lo + ldx : nullptr;
    std::uint32_t* o = out + p * ldo;
    for (std::int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = column_mask(n - j);
      const __m512i l = widen(m, lo + j);
      const __m512i h = hi != nullptr ? widen(m, hi + j) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(o + j, m, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
    }
  }
}

}  // namespace mantissa::kernels::detail
