#pragma once
// Block-scaled GEMM operands (numerics/block_scaling.hpp) at their format's width, and the
// products of two of them with float32 sums (docs/engine.md "Block-scaled linear layers").
//
// A PackedBlocks holds a quantized row-major matrix as the recipes store it: element codes
// (fp4 two per byte), one byte per E8M0 or e4m3 scale (float32 for fp8 blocks) and NVFP4's
// tensor scale: 4.25 bits per element for MXFP4, 4.5 for NVFP4, 8.25 for MXFP8.
//
// block_scaled_gemm multiplies two of them exactly, on one of two routes:
//   - values: element * tile scale is a bfloat16 value whenever the tile scale is a power of
//     two (MX's E8M0, fp8 blocks with power-of-two scales: 4 significant bits times 2^k) or
//     NVFP4's e4m3 scale (2 x 4 significant bits). Both operands are decoded to bfloat16
//     (vectorized, on all threads) and multiplied by the GEMM on its bfloat16 route choice
//     (matmul_route: AMX / AVX512-BF16 or the fp32 FMA route, all exact products with float32
//     sums); the tensor scales (NVFP4) multiply each finished block. A decoded value below
//     float32's normal range (2^-126, which bf16 units read as zero) sends both operands to
//     float32 and the fp32 FMA route instead, where it stays exact.
//   - chunks: fp8 elements with float32 scales that are not powers of two (fp8 blocks as
//     DeepSeek-V3 has them, per-tensor current scaling) are not bfloat16 values once scaled.
//     The product then runs over the reduction dimension in chunks over which both operands'
//     scales are constant (the block size; the whole K for per-tensor scales): each chunk's
//     product of the fp8 elements (exact, float32 sums) is multiplied by
//     (scale_a[row, chunk] * scale_b[col, chunk]) and added to the float32 result.
#include <cstdint>
#include <variant>
#include <vector>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/block_scaling.hpp"

namespace mantissa::quant {

using kernels::GemmEpilogue;  // the layer below's names this header's declarations use
using kernels::GemmShape;
using kernels::MatmulRoute;
using numerics::Format;

struct PackedBlocks {
  std::int64_t rows = 0, cols = 0;
  numerics::TileShape tile;
  Format element = Format::float8_e4m3;
  Format scale_format = Format::float8_e8m0;  // float8_e8m0, float8_e4m3 or float32
  numerics::CodeBytes elements;               // as BlockQuantized: fp4 packed two per byte
  std::vector<std::uint8_t> scale_codes;      // E8M0 / e4m3 scales, one byte each
  std::vector<float> scales32;                // float32 scales
  float tensor_scale = 1.0f;                  // NVFP4's global decode scale

  static PackedBlocks from(numerics::BlockQuantized&& q);
  std::int64_t tile_grid_cols() const { return (cols + tile.cols - 1) / tile.cols; }
  // The scale of the tile holding element (r, c), as a float32 value.
  float scale_at(std::int64_t r, std::int64_t c) const;
  // Whether every tile scale is a power of two, an e4m3 value or NaN / 0 (the values route).
  bool bf16_scales() const;
  std::int64_t bytes() const;  // elements and scales
};

// Which quantizer makes an operand, with its settings (tile, rounding, stream counter).
using BlockSpec =
    std::variant<numerics::MxSettings, numerics::Nvfp4Settings, numerics::Fp8BlockSettings>;

// Quantizes the row-major rows x cols matrix x (stored in x_format; its values are the
// float32 input) as `spec` says: the numerics quantizer's bits, run in groups of bands of
// tile rows on all threads, each decoded to float32 in a small buffer when x is not float32
// (NVFP4, whose tensor scale needs the whole matrix, in one piece).
PackedBlocks quantize_packed(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                             const BlockSpec& spec);
// Throws mantissa::Error naming `what` and the sizes unless rows, cols >= 0 and rows * cols
// fits in 64 bits (quantize_packed and quantize_to_bf16 check their sizes so).
void check_sizes(const char* what, std::int64_t rows, std::int64_t cols);

// Whether quantize_to_bf16 takes `spec`: MX, or fp8 blocks with power-of-two scales, with
// nearest-even rounding (their values are bfloat16 values), tiles of at least 1 x 1 and an
// element format the recipe has.
bool quantize_to_bf16_takes(const BlockSpec& spec);
// The values quantize_packed then dequantize_to_bf16 give (the same bits and the same
// answer), made straight from x (float32 or bfloat16, row-major rows x cols) without element
// codes, for an operand a product reads once: per tile the quantizer's scale, per element
// y = x * encode rounded to the element format in float32 bit arithmetic (vectorized; an
// infinity or NaN through the codec), times the decode scale. On all threads. Throws
// mantissa::Error for a spec it does not take, a negative size or another input format.
bool quantize_to_bf16(const void* x, Format x_format, std::int64_t rows, std::int64_t cols,
                      const BlockSpec& spec, std::uint16_t* out);

// element * tile scale (without the tensor scale) of every element, row-major, as bfloat16
// bit patterns; on all threads. Returns false, leaving `out` unspecified, when some value is
// not zero, NaN, infinite or a normal bfloat16 value (then dequantize_to_float32 is exact).
bool dequantize_to_bf16(const PackedBlocks& q, std::uint16_t* out);
// The scalar twin: one element at a time through the codec; the same bits and answer (a
// NaN's sign and payload aside: a NaN code in a NaN-scaled tile may give either NaN).
bool dequantize_to_bf16_ref(const PackedBlocks& q, std::uint16_t* out);
// element * tile scale as float32 (exact: the float32 product of an element and a power of
// two or an e4m3 scale).
void dequantize_to_float32(const PackedBlocks& q, float* out);

// One operand as a product reads it: packed blocks (decoded when multiplied), or the
// bfloat16 values quantize_to_bf16 made of a rows x cols matrix (power-of-two tile scales,
// no tensor scale).
struct BlockOperand {
  const PackedBlocks* packed = nullptr;
  const std::uint16_t* values = nullptr;
  // Optional, with `packed` of fp8 elements: those elements (without their scales) as
  // bfloat16 bit patterns, row-major like packed->elements, converted once by a caller that
  // multiplies the operand twice; a product whose elements multiply in one chunk reads them
  // instead of the codes (the same values: fp8 values are bfloat16 values).
  const std::uint16_t* element_values = nullptr;
  std::int64_t rows = 0, cols = 0;
  BlockOperand(const PackedBlocks& p) : packed(&p), rows(p.rows), cols(p.cols) {}  // NOLINT
  BlockOperand(const std::uint16_t* v, std::int64_t r, std::int64_t c)
      : values(v), rows(r), cols(c) {}
};

// op(A) op(B) (GemmShape's trans flags over A and B as stored) handed block by block to
// `epilogue`, on the route the header describes. A and B must match the shape; `route` is
// the policy's matmul_route. Throws mantissa::Error when the chunk route would need element
// formats that are not fp8, scales that are not constant over common chunks, or an operand
// given as values.
void block_scaled_gemm(const GemmShape& s, BlockOperand a, BlockOperand b,
                       const GemmEpilogue& epilogue, MatmulRoute route);
// Whether block_scaled_gemm(s, a, b, ..., route) multiplies a's and b's fp8 elements in one
// chunk on a route that copies fp8 codes to bfloat16 for the call
// (kernels::gemm_copies_to_bf16): a caller multiplying one of them twice can then convert
// its elements once (BlockOperand::element_values). False for operands given as values or
// of other element formats; throws mantissa::Error, as block_scaled_gemm would, for fp8
// operands whose tiles share no chunks along the reduction dimension.
bool copies_elements_to_bf16(const GemmShape& s, BlockOperand a, BlockOperand b, MatmulRoute route);
// The scalar twin of the chunk route (what the fp32 route gives bit for bit): per element of
// C, per chunk, one std::fma chain over the chunk's k in order, then
// c = c + chunk_sum * (scale_a * scale_b). Writes C [m, ldc] (ldc = s.ldc).
void block_scaled_gemm_chunks_ref(const GemmShape& s, const PackedBlocks& a, const PackedBlocks& b,
                                  float* c);

}  // namespace mantissa::quant
