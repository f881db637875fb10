// Compiled with -mamx-tile -mamx-bf16; entered only after amx_available().
#include "amx_tiles.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace mantissa::kernels::detail {
namespace {

constexpr int kTileRows = 16;
constexpr int kTileBytes = 64;       // a row of a tile: 16 float32 or 16 pair words
constexpr std::int64_t kChunk = 16;  // pairs per TDPBF16PS
constexpr std::int64_t kBlock = 32;  // rows and columns of C per block (2 x 2 tiles)

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

TileConfig make_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = kTileBytes;
    cfg.rows[t] = kTileRows;
  }
  return cfg;
}

// The four products of a chunk, A in tmm4/5 and B in tmm6/7 already.
inline void multiply_chunk() {
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

inline void load_c(const float* c, std::int64_t ldc) {
  const auto stride = static_cast<long>(ldc * 4);
  _tile_loadd(0, c, stride);
  _tile_loadd(1, c + 16, stride);
  _tile_loadd(2, c + 16 * ldc, stride);
  _tile_loadd(3, c + 16 * ldc + 16, stride);
}

inline void zero_c() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

inline void store_c(float* c, std::int64_t ldc) {
  const auto stride = static_cast<long>(ldc * 4);
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c + 16 * ldc, stride);
  _tile_stored(3, c + 16 * ldc + 16, stride);
}

// A's rows [0, 32) at a (rows `a_ld` words apart) and B's columns [0, 32) at b (pair rows
// `b_ld` words apart), 16 pairs each.
inline void load_operands(const std::uint32_t* a, std::int64_t a_ld, const std::uint32_t* b,
                          std::int64_t b_ld) {
  _tile_loadd(4, a, static_cast<long>(a_ld * 4));
  _tile_loadd(5, a + 16 * a_ld, static_cast<long>(a_ld * 4));
  _tile_loadd(6, b, static_cast<long>(b_ld * 4));
  _tile_loadd(7, b + 16, static_cast<long>(b_ld * 4));
}

// Pair words, rows `ld` words apart.
struct Words {
  const std::uint32_t* data;
  std::int64_t ld;
};

// The rows x cols words of w copied into a zeroed pad of pad_rows x pad_cols.
Words padded(Words w, std::int64_t rows, std::int64_t cols, std::uint32_t* pad,
             std::int64_t pad_rows, std::int64_t pad_cols) {
  std::fill(pad, pad + pad_rows * pad_cols, 0u);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy(w.data + r * w.ld, w.data + r * w.ld + cols, pad + r * pad_cols);
  }
  return {pad, pad_cols};
}

// One 32 x 32 block of C at rows i, columns j. Operands that do not fill the tiles (the
// product's last rows, columns or pairs) are copied into zero-padded scratch first.
void product_block(std::int64_t m, std::int64_t n, std::int64_t pairs, const PairRows& a,
                   const PairCols& b, float* c, std::int64_t ldc, bool accumulate, std::int64_t i,
                   std::int64_t j) {
  const std::int64_t rows = std::min(kBlock, m - i), cols = std::min(kBlock, n - j);
  const bool whole_c = rows == kBlock && cols == kBlock;
  alignas(64) float c_pad[kBlock * kBlock];
  alignas(64) std::uint32_t a_pad[kBlock * kChunk];
  alignas(64) std::uint32_t b_pad[kChunk * kBlock];
  float* cp = whole_c ? c + i * ldc + j : c_pad;
  const std::int64_t ldcp = whole_c ? ldc : kBlock;
  if (!accumulate) {
    zero_c();
  } else {
    if (!whole_c) {
      std::fill(c_pad, c_pad + kBlock * kBlock, 0.0f);
      for (std::int64_t r = 0; r < rows; ++r) {
        std::copy(c + (i + r) * ldc + j, c + (i + r) * ldc + j + cols, c_pad + r * kBlock);
      }
    }
    load_c(cp, ldcp);
  }
  for (std::int64_t p0 = 0; p0 < pairs; p0 += kChunk) {
    const std::int64_t np = std::min(kChunk, pairs - p0);
    Words ap{a.data + i * a.row_stride + p0, a.row_stride};
    if (rows < kBlock || np < kChunk) ap = padded(ap, rows, np, a_pad, kBlock, kChunk);
    Words bp{b.data + p0 * b.ld + j, b.ld};
    if (cols < kBlock || np < kChunk) bp = padded(bp, np, cols, b_pad, kChunk, kBlock);
    load_operands(ap.data, ap.ld, bp.data, bp.ld);
    multiply_chunk();
  }
  store_c(cp, ldcp);
  if (!whole_c) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy(c_pad + r * kBlock, c_pad + r * kBlock + cols, c + (i + r) * ldc + j);
    }
  }
}

}  // namespace

void amx_load_tiles() {
  static const TileConfig config = make_config();
  _tile_loadconfig(&config);
}

void amx_release_tiles() {
  _tile_release();
}

void amx_pair_product_tiles(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                            PairCols b, float* c, std::int64_t ldc, bool accumulate) {
  amx_load_tiles();
  for (std::int64_t j = 0; j < n; j += kBlock) {
    for (std::int64_t i = 0; i < m; i += kBlock) {
      product_block(m, n, pairs, a, b, c, ldc, accumulate, i, j);
    }
  }
}

void amx_micro_kernel(std::int64_t pairs, const std::uint32_t* a, const std::uint32_t* b, float* c,
                      std::int64_t ldc, bool load) {
  if (load) {
    load_c(c, ldc);
  } else {
    zero_c();
  }
  for (std::int64_t p0 = 0; p0 < pairs; p0 += kChunk) {
    load_operands(a + p0, pairs, b + p0 * kBlock, kBlock);
    multiply_chunk();
  }
  store_c(c, ldc);
}

}  // namespace mantissa::kernels::detail
