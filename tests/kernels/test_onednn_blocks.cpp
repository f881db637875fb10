// oneDNN's routes hand it the whole product where the scratch allows (onednn_block_rows),
// else blocks of rows: the block sizes against hand-derived values, and a product of two
// blocks against the exact sums.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"
#include "onednn_routes.hpp"

namespace {
using namespace mantissa::kernels;
using mantissa::numerics::Format;

TEST(OnednnBlocks, WholeProductsWithin16MiBElseBlocksOfAtLeast512Rows) {
  constexpr std::int64_t kBudget = std::int64_t{16} << 20;
  // GPT-ref's weight gradient 1536 x 384 x 2048 with A copied as float32: 2048 * 4 + 384 * 4 =
  // 9,728 bytes a row, 1,536 rows = 14.9 MB: whole.
  EXPECT_EQ(gemm_detail::onednn_block_rows(1536, 9728), 1536);
  // A read in place (float32): only C's rows, 384 * 4 bytes.
  EXPECT_EQ(gemm_detail::onednn_block_rows(2048, 1536), 2048);
  // Rows of 8,224 bytes: 16 MiB holds 2,040 of them (16,777,216 / 8,224 = 2,040.0...).
  EXPECT_EQ(gemm_detail::onednn_block_rows(100000, 8224), 2040);
  EXPECT_EQ(gemm_detail::onednn_block_rows(100000, kBudget / 3000), 3000);
  // Rows wider than the budget allows 512 of: still 512 rows.
  EXPECT_EQ(gemm_detail::onednn_block_rows(100000, kBudget), 512);
  // Fewer rows than the minimum: one block of the minimum, which holds them all.
  EXPECT_EQ(gemm_detail::onednn_block_rows(300, kBudget), 512);
}

TEST(OnednnBlocks, TwoBlocksOfRowsGiveTheExactProduct) {
  // bf16 A (copied to float32 for oneDNN's fp32 matmul: 2048 * 4 + 8 * 4 = 8,224 bytes a row),
  // 2,100 rows: blocks of 2,040 and 60. Small integers: every sum exact in float32
  // (|sum| <= 2048 * 15 * 15 < 2^24), so the result is the exact product.
  const std::int64_t m = 2100, n = 8, k = 2048;
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> value(-15, 15);
  for (const bool ta : {false, true}) {
    std::vector<float> av(static_cast<std::size_t>(m * k)), bv(static_cast<std::size_t>(k * n));
    for (float& x : av) x = static_cast<float>(value(rng));
    for (float& x : bv) x = static_cast<float>(value(rng));
    std::vector<std::uint16_t> a16(av.size());
    mantissa::numerics::encode_array(av.data(), av.size(), Format::bfloat16, a16.data());
    const GemmShape s = GemmShape::dense(m, n, k, ta, false);
    std::vector<float> out(static_cast<std::size_t>(m * n), -1.0f);
    gemm(s, Operand(a16.data(), Format::bfloat16), bv.data(), out.data(), false,
         {Format::bfloat16, 1, GemmAlgorithm::automatic, GemmRoute::onednn_fp32});
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          want += static_cast<double>(ta ? av[p * m + i] : av[i * k + p]) * bv[p * n + j];
        }
        ASSERT_EQ(static_cast<double>(out[i * n + j]), want)
            << (ta ? "A^T " : "") << "row " << i << " column " << j;
      }
    }
  }
}

}  // namespace
