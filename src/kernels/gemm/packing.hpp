#pragma once
// Internal: packing for the blocked fp32 GEMM. Operands are read in their storage format and
// decoded here into float32 panels laid out for the micro-kernels, 8 lanes at a time in
// registers (bfloat16 by a shift, float16 by F16C, cbfloat16 by bit arithmetic for normal
// values, fp8 through a 256-entry table); the pass's part (hi / lo of the bf16 split) is
// applied to the panel after.
// Panels are the only float32 copies an operand ever gets, and they are cache-sized.
#include <cstdint>

#include "mantissa/kernels/gemm.hpp"
#include "passes.hpp"

namespace mantissa::kernels::gemm_detail {

// An operand with its layout: element (r, c) of op(X) at index
// (trans ? c * ld + r : r * ld + c) of the storage.
struct MatrixRef {
  Operand x;
  bool trans = false;
  std::int64_t ld = 0;
};

// Rows [r0, r0 + rows) and depths [k0, k0 + kc) of op(A), as panels of `mr` rows:
// panel q at dst + q * kc * mr holds element (r0 + q * mr + i, k0 + k) at [k * mr + i]; rows
// past `rows` are zero.
void pack_a(const MatrixRef& a, std::int64_t r0, std::int64_t rows, std::int64_t k0,
            std::int64_t kc, Part part, int mr, float* dst);

// Depths [k0, k0 + kc) and columns [c0, c0 + cols) of op(B), as panels of `nr` columns:
// panel q at dst + q * kc * nr holds element (k0 + k, c0 + q * nr + j) at [k * nr + j];
// columns past `cols` are zero.
void pack_b(const MatrixRef& b, std::int64_t k0, std::int64_t kc, std::int64_t c0,
            std::int64_t cols, Part part, int nr, float* dst);

// Pairs a packed float32 panel of bf16 values (src[k * width + x], k < kc) into bf16 pair
// words: dst[p * width + x] = bits(src[(2p+1) width + x]) high | bits(src[2p width + x]) low,
// the missing odd depth of an odd kc read as zero. The values must be bf16 values (their low
// 16 bits zero): the halves are taken, not rounded.
void pair_panel(const float* src, std::int64_t kc, int width, std::uint32_t* dst);

// Pair panels (AMX's or the AVX512-BF16 kernel's) straight from bfloat16 storage, without a
// float32 panel between: `lines` lines (rows of op(A), or columns of op(B); up to `width`,
// the rest zero) by depths
// [k0, k0 + kc), as pair words padded to `padded` pairs, laid out as pair_panel_padded's.
// Returns false (and writes nothing) unless x is stored as bfloat16 and `part` reads the
// stored values themselves (whole, or hi: a bf16 value is its own hi).
bool pair_panel_bf16(const MatrixRef& x, bool a_side, std::int64_t line0, std::int64_t lines,
                     std::int64_t k0, std::int64_t kc, Part part, int width, std::int64_t padded,
                     bool rows_layout, std::uint32_t* dst);

// Every pair panel of lines [line0, line0 + lines) at once (panel q at dst + q * padded *
// width, each laid out by pair as pair_panel_bf16 lays it out) where x is stored as bfloat16
// with each depth's lines contiguous (B not transposed, A transposed) and the active SIMD
// path is avx512: one pass along the depth rows, each read once, instead of a strided pass
// per panel. Returns false (and writes nothing) elsewhere; pair_panel_bf16_ref per panel is
// its twin.
bool pair_panels_bf16_across(const MatrixRef& x, bool a_side, std::int64_t line0,
                             std::int64_t lines, std::int64_t k0, std::int64_t kc, Part part,
                             int width, std::int64_t padded, std::uint32_t* dst);

// The scalar twin of pair_panel_bf16 (which takes AVX-512 where it can): the same words.
bool pair_panel_bf16_ref(const MatrixRef& x, bool a_side, std::int64_t line0, std::int64_t lines,
                         std::int64_t k0, std::int64_t kc, Part part, int width,
                         std::int64_t padded, bool rows_layout, std::uint32_t* dst);

// The same pair words with the pairs padded to `padded` (>= (kc + 1) / 2) by zero words, laid
// out by row for AMX's A tiles (rows_layout: dst[x * padded + p]) or by pair for its B tiles
// (dst[p * width + x]).
void pair_panel_padded(const float* src, std::int64_t kc, int width, std::int64_t padded,
                       bool rows_layout, std::uint32_t* dst);

}  // namespace mantissa::kernels::gemm_detail
