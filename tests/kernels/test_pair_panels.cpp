// Pair panels from bfloat16 storage (src/kernels/gemm/packing.hpp): every layout (A or B,
// stored as is or transposed, laid out by line for AMX's A tiles or by pair), odd and even
// depths across several 16-pair blocks, partial line counts, odd leading dimensions and
// offsets. Each word is checked against the definition (line l, pair p: depth 2p in the low
// half, 2p + 1 in the high half, zero past the depth, zero lines past `lines`, zero pairs to
// the padding), on the active path and on the scalar twin, every word of the panel written.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "mantissa/numerics/cpu_features.hpp"
#include "packing.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

using numerics::Format;

// The 16-bit value of op(X) at line `line` (a row of op(A) or a column of op(B)) and depth k.
std::uint16_t element(const std::vector<std::uint16_t>& s, const MatrixRef& x, bool a_side,
                      std::int64_t line, std::int64_t k) {
  // op(A)(r, k) and op(B)(k, c) at index (trans ? col * ld + row : row * ld + col).
  const std::int64_t row = a_side ? line : k, col = a_side ? k : line;
  return s[static_cast<std::size_t>(x.trans ? col * x.ld + row : row * x.ld + col)];
}

TEST(PairPanels, EveryLayoutMatchesTheDefinitionOnEveryPath) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  const bool avx512 = numerics::cpu_supports(numerics::SimdPath::avx512);
  if (!avx512) std::printf("[  SKIPPED ] the AVX-512 pair panels: this CPU has no AVX-512\n");
  const std::int64_t lines_total = 45, depth_total = 90, ld = 97;  // odd: rows start unaligned
  std::vector<std::uint16_t> storage(static_cast<std::size_t>(ld * ld));
  for (auto& v : storage) v = static_cast<std::uint16_t>(bits(rng));
  int checked = 0;
  for (const bool a_side : {true, false}) {
    for (const bool trans : {false, true}) {
      for (const bool rows_layout : {false, true}) {
        for (const int width : {12, 32}) {
          for (const std::int64_t kc : {1, 2, 7, 31, 32, 33, 64, 71}) {
            for (const std::int64_t lines :
                 {std::int64_t{1}, std::int64_t{5}, std::int64_t{width}}) {
              const MatrixRef x{{storage.data(), Format::bfloat16}, trans, ld};
              const std::int64_t line0 = 3, k0 = 5, pairs = (kc + 1) / 2;
              const std::int64_t padded = (pairs + 15) / 16 * 16;
              ASSERT_LE(line0 + lines, lines_total);
              ASSERT_LE(k0 + kc, depth_total);
              const auto want = [&](std::int64_t l, std::int64_t p) -> std::uint32_t {
                if (l >= lines || 2 * p >= kc) return 0u;
                const std::uint32_t lo = element(storage, x, a_side, line0 + l, k0 + 2 * p);
                const std::uint32_t hi =
                    2 * p + 1 < kc ? element(storage, x, a_side, line0 + l, k0 + 2 * p + 1) : 0u;
                return lo | hi << 16;
              };
              for (const bool twin : {false, true}) {
                if (!twin && !avx512) continue;
                const numerics::SimdPath path =
                    twin ? numerics::SimdPath::avx2 : numerics::SimdPath::avx512;
                if (!numerics::cpu_supports(path)) continue;
                numerics::set_simd_path(path);
                std::vector<std::uint32_t> dst(static_cast<std::size_t>(width * padded),
                                               0xDEADBEEFu);
                const bool done =
                    twin ? pair_panel_bf16_ref(x, a_side, line0, lines, k0, kc, Part::whole, width,
                                               padded, rows_layout, dst.data())
                         : pair_panel_bf16(x, a_side, line0, lines, k0, kc, Part::whole, width,
                                           padded, rows_layout, dst.data());
                ASSERT_TRUE(done);
                std::int64_t wrong = 0;
                for (std::int64_t l = 0; l < width; ++l) {
                  for (std::int64_t p = 0; p < padded; ++p) {
                    const std::size_t at =
                        static_cast<std::size_t>(rows_layout ? l * padded + p : p * width + l);
                    wrong += dst[at] != want(l, p);
                  }
                }
                EXPECT_EQ(wrong, 0) << "a_side " << a_side << " trans " << trans << " rows_layout "
                                    << rows_layout << " width " << width << " kc " << kc
                                    << " lines " << lines << (twin ? " (scalar twin)" : "");
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  numerics::set_simd_path(numerics::best_simd_path());
  EXPECT_GT(checked, 0);
}

TEST(PairPanels, AcrossPanelsMatchTheDefinitionPanelByPanel) {
  if (!numerics::cpu_supports(numerics::SimdPath::avx512)) {
    std::printf("[  SKIPPED ] pair_panels_bf16_across: this CPU has no AVX-512\n");
    return;
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  const std::int64_t ld = 211;  // odd: rows start unaligned
  std::vector<std::uint16_t> storage(static_cast<std::size_t>(ld * 90));
  for (auto& v : storage) v = static_cast<std::uint16_t>(bits(rng));
  for (const bool a_side : {false, true}) {
    // Lines along the stored rows: B as stored, A transposed.
    const MatrixRef b{{storage.data(), Format::bfloat16}, a_side, ld};
    for (const int width : {12, 16, 32}) {
      for (const std::int64_t kc : {1, 2, 33, 64, 71}) {
        for (const std::int64_t cols : {std::int64_t{1}, std::int64_t{17}, std::int64_t{width},
                                        std::int64_t{3 * width}, std::int64_t{150}}) {
          const std::int64_t c0 = 7, k0 = 3, pairs = (kc + 1) / 2, padded = (pairs + 15) / 16 * 16;
          const std::int64_t panels = (cols + width - 1) / width;
          std::vector<std::uint32_t> dst(static_cast<std::size_t>(panels * padded * width),
                                         0xDEADBEEFu);
          ASSERT_TRUE(pair_panels_bf16_across(b, a_side, c0, cols, k0, kc, Part::whole, width,
                                              padded, dst.data()));
          std::int64_t wrong = 0;
          for (std::int64_t q = 0; q < panels; ++q) {
            for (std::int64_t p = 0; p < padded; ++p) {
              for (std::int64_t j = 0; j < width; ++j) {
                const std::int64_t c = q * width + j;
                std::uint32_t want = 0;
                if (c < cols && 2 * p < kc) {
                  want = element(storage, b, a_side, c0 + c, k0 + 2 * p);
                  if (2 * p + 1 < kc) {
                    want |= static_cast<std::uint32_t>(
                                element(storage, b, a_side, c0 + c, k0 + 2 * p + 1))
                            << 16;
                  }
                }
                wrong += dst[static_cast<std::size_t>((q * padded + p) * width + j)] != want;
              }
            }
          }
          EXPECT_EQ(wrong, 0) << "a_side " << a_side << " width " << width << " kc " << kc
                              << " lines " << cols;
        }
      }
    }
  }
  // Not taken: lines contiguous (B transposed, A as stored), the lo part, another format,
  // another SIMD path.
  const MatrixRef b{{storage.data(), Format::bfloat16}, false, ld};
  std::vector<std::uint32_t> dst(32 * 32);
  EXPECT_FALSE(pair_panels_bf16_across(MatrixRef{b.x, true, ld}, false, 0, 32, 0, 32, Part::whole,
                                       32, 16, dst.data()));
  EXPECT_FALSE(pair_panels_bf16_across(b, true, 0, 32, 0, 32, Part::whole, 32, 16, dst.data()));
  EXPECT_FALSE(pair_panels_bf16_across(b, false, 0, 32, 0, 32, Part::lo, 32, 16, dst.data()));
  EXPECT_FALSE(pair_panels_bf16_across(MatrixRef{{storage.data(), Format::float16}, false, ld},
                                       false, 0, 32, 0, 32, Part::whole, 32, 16, dst.data()));
  numerics::set_simd_path(numerics::SimdPath::avx2);
  EXPECT_FALSE(pair_panels_bf16_across(b, false, 0, 32, 0, 32, Part::whole, 32, 16, dst.data()));
  numerics::set_simd_path(numerics::best_simd_path());
}

TEST(PairPanels, OnlyBfloat16StorageAndItsWholeOrHiPartArePaired) {
  std::vector<std::uint16_t> storage(64 * 64, 0x3F80);
  std::vector<std::uint32_t> dst(32 * 32);
  const MatrixRef bf16{{storage.data(), Format::bfloat16}, false, 64};
  const MatrixRef f16{{storage.data(), Format::float16}, false, 64};
  EXPECT_FALSE(pair_panel_bf16(f16, true, 0, 32, 0, 32, Part::whole, 32, 16, true, dst.data()));
  EXPECT_FALSE(pair_panel_bf16(bf16, true, 0, 32, 0, 32, Part::lo, 32, 16, false, dst.data()));
  EXPECT_TRUE(pair_panel_bf16(bf16, false, 0, 32, 0, 32, Part::hi, 32, 16, false, dst.data()));
  EXPECT_EQ(dst[0], 0x3F803F80u);
}

}  // namespace
}  // namespace mantissa::kernels::gemm_detail
