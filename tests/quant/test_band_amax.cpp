// The block quantizers' tile amaxes on the AVX-512 units (src/quant/block_bands_avx512.hpp)
// and on AVX2 (block_bands_avx2.hpp; eight 1 x 32 tiles folded at once, one-column tiles in
// 16-bit lanes) for bfloat16 input: each tile's largest magnitude bits folded into what amax held,
// against the definition (the high half of the float32 bits of max |x|, a NaN above every number),
// for 1 x 32 tiles (sixteen at a time, then one by one, then a partial last tile), one-column
// tiles and 1 x 64 tiles, over bands of one to three rows, with NaNs, infinities, zeros,
// subnormals and the largest finite value placed inside the batched tiles and after them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "block_bands_avx2.hpp"
#include "block_bands_avx512.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace mantissa::quant::detail {
namespace {

// Runs the bodies this CPU has on the same cases.
void bfloat16_tiles_match_the_definition(bool avx512) {
  std::mt19937 rng(11);
  for (const std::int64_t cols :
       {std::int64_t{512}, std::int64_t{1191}, std::int64_t{1536}, std::int64_t{2048 + 96 + 5}}) {
    for (const std::int64_t band_rows : {std::int64_t{1}, std::int64_t{3}}) {
      std::vector<std::uint16_t> x(static_cast<std::size_t>(band_rows * cols));
      for (auto& v : x) {  // normal numbers of either sign, exponents 100..150
        v = static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((100 + rng() % 51) << 7) |
                                       (rng() & 0x7fu));
      }
      // Specials: a NaN in tile 3, infinities in tiles 9 and 20 (of a row that has one; else
      // in the column 640 wraps to), a zero tile 5, a subnormal alone in tile 6 (the rest
      // zero), the largest finite value in tile 15 and in the last.
      const auto at = [&](std::int64_t r, std::int64_t c) -> std::uint16_t& {
        return x.at(static_cast<std::size_t>(r * cols + c % cols));
      };
      at(0, 3 * 32 + 7) = 0xffc1;
      at(band_rows - 1, 9 * 32 + 31) = 0x7f80;
      at(0, 20 * 32) = 0xff80;
      for (std::int64_t r = 0; r < band_rows; ++r) {
        for (std::int64_t c = 5 * 32; c < 7 * 32; ++c) at(r, c) = c % 2 ? 0x8000 : 0;
      }
      at(band_rows - 1, 6 * 32 + 13) = 0x8001;
      at(0, 15 * 32 + 30) = 0x7f7f;
      at(band_rows - 1, cols - 1) = 0xff7f;
      for (const std::int64_t tile_cols : {std::int64_t{32}, std::int64_t{1}, std::int64_t{64}}) {
        SCOPED_TRACE(std::to_string(cols) + " columns, " + std::to_string(band_rows) +
                     " rows, tiles of " + std::to_string(tile_cols));
        const std::int64_t tiles = (cols + tile_cols - 1) / tile_cols;
        std::vector<std::uint32_t> prior(static_cast<std::size_t>(tiles));
        for (auto& p : prior) p = rng() % 4 == 0 ? (110u + rng() % 30) << 23 : 0u;
        std::vector<std::uint32_t> want = prior;
        for (std::int64_t r = 0; r < band_rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            const std::uint32_t bits = static_cast<std::uint32_t>(at(r, c) & 0x7fffu) << 16;
            auto& w = want[static_cast<std::size_t>(c / tile_cols)];
            w = std::max(w, bits);
          }
        }
        std::vector<std::uint32_t> got = prior;
        std::vector<std::uint16_t> scratch(static_cast<std::size_t>(cols));
        const BandRows in{x.data(), true, cols, 0, band_rows};
        if (avx512) {
          band_amax_avx512(in, tile_cols, got.data(), scratch.data());
        } else {
          band_amax_avx2(in, tile_cols, got.data(), scratch.data());
        }
        ASSERT_EQ(got, want);
        if (avx512) continue;
        // Without the scratch words (one-column tiles then take 8 lanes of float32 bits).
        got = prior;
        band_amax_avx2(in, tile_cols, got.data(), nullptr);
        ASSERT_EQ(got, want);
      }
    }
  }
}

TEST(BandAmax, Bfloat16TilesMatchTheDefinition) {
  bfloat16_tiles_match_the_definition(false);
  if (!numerics::cpu_supports(numerics::SimdPath::avx512)) {
    std::printf("[  SKIPPED ] band amaxes on AVX-512: this CPU has no AVX-512\n");
    return;
  }
  bfloat16_tiles_match_the_definition(true);
}

}  // namespace
}  // namespace mantissa::quant::detail
