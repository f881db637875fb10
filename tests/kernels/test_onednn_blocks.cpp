// oneDNN's routes hand it the whole product where the scratch allows (onednn_block_rows),
// else blocks of rows: the block sizes against hand-derived values, and a product of two
// blocks against the exact sums; and a route probe gives back the operand copies it made.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "blocked_gemm.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
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

// A shape's first product under `automatic` runs every route once to time it; the copies of
// operands a route makes when it cannot read them in place (oneDNN's float32 copy of a
// bfloat16 B, the bf16 pair kernels' bfloat16 copy of a float32 operand) are as large as the
// operand, and the probe gives them back: the chosen route (here fp32, our blocked GEMM,
// which packs panels and copies no operand) leaves none held. The same product on a named
// route that copies keeps its copy, so the measure sees real memory.
TEST(OnednnBlocks, ARouteProbeGivesBackTheOperandCopiesItMade) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mantissa-probe-copies-" + std::to_string(::getpid()));
  set_route_cache_path(dir.string());
  set_route_clock([] { return 1.0; });  // every route equally fast: the first, fp32, is taken
  const std::int64_t m = 64, n = 256, k = 1024;  // B: 1 MiB as float32
  std::vector<float> a(static_cast<std::size_t>(m * k), 0.5f), b(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7);
  std::vector<std::uint16_t> b16(b.size());
  mantissa::numerics::encode_array(b.data(), b.size(), Format::bfloat16, b16.data());
  std::vector<float> out(static_cast<std::size_t>(m * n));
  const GemmShape s = GemmShape::dense(m, n, k, false, false);
  const std::size_t b_bytes = static_cast<std::size_t>(k * n) * sizeof(float);
  gemm_detail::release_onednn_copies();
  gemm_detail::release_operand_copies();

  // bfloat16 B, float32 A, bfloat16 products: onednn_fp32 copies B as float32, the bf16
  // route (where this CPU has it) copies A as bfloat16.
  const GemmPrecision automatic{Format::bfloat16, 1, GemmAlgorithm::automatic,
                                GemmRoute::automatic};
  gemm(s, a.data(), Operand(b16.data(), Format::bfloat16), out.data(), false, automatic);
  const std::vector<RouteRecord> recs = route_records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].source, RouteSource::measured);
  EXPECT_EQ(recs[0].route, MatmulRoute::fp32);
  EXPECT_GT(recs[0].gflops[static_cast<std::size_t>(MatmulRoute::onednn_fp32)], 0.0);
  EXPECT_EQ(gemm_detail::onednn_copies_bytes(), 0u);
  EXPECT_EQ(gemm_detail::operand_copies_bytes(), 0u);

  GemmPrecision named = automatic;
  named.route = GemmRoute::onednn_fp32;
  gemm(s, a.data(), Operand(b16.data(), Format::bfloat16), out.data(), false, named);
  EXPECT_GE(gemm_detail::onednn_copies_bytes(), b_bytes);
  if (route_unavailable(MatmulRoute::bf16, Format::bfloat16).empty()) {
    named.route = GemmRoute::bf16;
    gemm(s, a.data(), Operand(b16.data(), Format::bfloat16), out.data(), false, named);
    EXPECT_GE(gemm_detail::operand_copies_bytes(), static_cast<std::size_t>(m * k) * 2);
  } else {
    std::cout << "skip: the bf16 route's copies (this CPU has no AVX512-BF16)\n";
  }
  gemm_detail::release_onednn_copies();
  gemm_detail::release_operand_copies();
  set_route_clock({});
  set_route_cache_path("");
  clear_routes();
  std::filesystem::remove_all(dir);
}

}  // namespace
