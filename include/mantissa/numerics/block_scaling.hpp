#pragma once
// Block-scaled quantization of a row-major float32 matrix: one scale per tile (a block of
// 1 x k, k x 1, 16 x 16, 128 x 128 elements, or the whole matrix), the elements in a narrow
// format, value = element * tile scale (* tensor scale for NVFP4). Three recipes:
//
// - MX (OCP Microscaling v1.0): E8M0 scales, fp8 / fp6 / fp4 elements, k = 32 along the
//   reduction dimension. The scale exponent follows one of four rules (MxScaleRule), all
//   clamped to E8M0's -127..127; elements are x / X in the element format (saturating).
// - NVFP4 (Transformer Engine's NVFP4BlockScaling, checked against its reference quantizer
//   reference_nvfp4.py): fp4 e2m1 elements, an e4m3 scale per 1 x 16 (or 16 x 16 for
//   weights) tile and a float32 scale per tensor, computed in float32 in this order:
//     global_encode = min(448 * 6 / global_amax, FLT_MAX); 1 when that is 0 or amax is 0
//     global_decode = 1 / global_encode
//     decode_scale  = e4m3_rne(clamp(min(tile_amax * (global_encode * fp32(1/6)), FLT_MAX),
//                                    448))
//     encode_scale  = min(1 / (decode_scale * global_decode), FLT_MAX)
//     element       = e2m1(clamp(x * encode_scale, -6, 6))  (a product of exactly zero: +0)
//     value         = element * decode_scale * global_decode
//   (min and clamp propagate NaN.) Optionally the 16-point random Hadamard transform first.
// - fp8 blocks and per-tensor current scaling (DeepSeek-V3's 1 x 128 / 128 x 128 tiles, TE's
//   Float8BlockScaling and Float8CurrentScaling): per tile the encode scale is TE's
//   compute_scale_from_amax: amax < epsilon -> epsilon; amax 0, inf or NaN -> 1; else
//   fp8_max / amax (FLT_MAX when that overflows), optionally rounded down to a power of two
//   (the exponent bits kept); elements are x * scale in the fp8 format (saturating); the
//   stored decode scale is 1 / scale.
//
// Edge cases (tested against an exact reference): an all-zero tile has the smallest scale
// (E8M0 2^-127; NVFP4 decode scale 0; fp8 blocks 1) and zero elements. A tile with a NaN
// has a NaN scale (E8M0 0xFF, e4m3 NaN) and all its element codes 0 under MX and NVFP4; under
// fp8 blocks its scale is 1 and the NaN is kept in its element. An infinity makes an MX
// scale 2^127 (every rule) and saturates (or stays infinite in e5m2). Tiles at the right and
// bottom edges may be shorter than the tile shape: their scale covers what is there.
//
// Stochastic rounding of element (r, c) uses stochastic_bits(seed, counter + r * cols + c),
// the same bits on every path. Every quantizer has a scalar `_ref` twin that gives the same
// bits one element at a time.
#include <cstdint>
#include <vector>

#include "mantissa/names.hpp"
#include "mantissa/numerics/code_bytes.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/rounding.hpp"

namespace mantissa::numerics {

// How an MX block's E8M0 exponent follows from its largest magnitude amax (emax: the element
// format's largest exponent, mx_emax).
enum class MxScaleRule : std::uint8_t {
  floor,  // OCP spec 6.3, microxcaling, torchao FLOOR: floor(log2(amax)) - emax
  rceil,  // cuBLAS / Transformer Engine: ceil(log2(amax / max_elem)), amax / max rounded up
  ceil,   // torchao CEIL: ceil(log2(amax)) - emax
  even,   // torchao EVEN: amax rounded to the element's mantissa width (ties away), then floor
};
inline constexpr NameTable<MxScaleRule, 4> kMxScaleRuleNames = {{
    {"floor", MxScaleRule::floor},
    {"rceil", MxScaleRule::rceil},
    {"ceil", MxScaleRule::ceil},
    {"even", MxScaleRule::even},
}};

// The exponent of the largest power of two of an MX element format: e4m3 8, e5m2 15,
// e2m3 2, e3m2 4, e2m1 2. Throws mantissa::Error for a format that is not an element format.
int mx_emax(Format element);

// The E8M0 field of an MX block's scale: NaN amax -> 0xFF; +inf -> 0xFE; amax 0 -> 0x00;
// otherwise the rule's exponent clamped to -127..127, plus 127.
std::uint8_t mx_scale_field(float amax, Format element, MxScaleRule rule);
// The same for n amaxes given as float32 bits (the quantizers' bands: one call per band).
void mx_scale_fields(const std::uint32_t* amax_bits, std::size_t n, Format element,
                     MxScaleRule rule, std::uint8_t* fields);

// Transformer Engine's compute_scale_from_amax (the encode multiplier; see above).
float fp8_encode_scale(float amax, Format element, bool power_of_two, float epsilon);

// NVFP4's per-tensor float32 encode scale from the tensor's amax (see above).
float nvfp4_global_encode_scale(float global_amax);

// A tile of `rows` x `cols` elements (each at least 1; larger than the matrix: all of it).
struct TileShape {
  std::int64_t rows = 1;
  std::int64_t cols = 32;
  bool operator==(const TileShape&) const = default;
};

// A quantized matrix. Elements row-major, one code per byte, except float4_e2m1: packed two
// per byte in row-major order (fp4_packing.hpp). Scales: one per tile, row-major over the
// tile grid, as the float32 value of the decode scale (exactly a value of scale_format).
struct BlockQuantized {
  std::int64_t rows = 0, cols = 0;
  TileShape tile;
  Format element = Format::float8_e4m3;
  Format scale_format = Format::float8_e8m0;  // float8_e8m0, float8_e4m3 or float32
  CodeBytes elements;                         // every byte written by the quantizer
  std::vector<float> scales;
  float tensor_scale = 1.0f;  // NVFP4's global decode scale; 1 for the others

  std::int64_t tile_grid_rows() const { return (rows + tile.rows - 1) / tile.rows; }
  std::int64_t tile_grid_cols() const { return (cols + tile.cols - 1) / tile.cols; }
  // The scales' bit patterns in scale_format (E8M0 / e4m3 one byte each; float32 four).
  std::vector<std::uint8_t> scale_codes() const;
  // Bits per element with the scales: 8.25 for MXFP8, 4.25 for MXFP4, 4.5 for NVFP4.
  double bits_per_element() const;
};

struct MxSettings {
  Format element = Format::float8_e4m3;
  MxScaleRule rule = MxScaleRule::floor;
  TileShape tile{1, 32};  // {1, 32} row-wise, {32, 1} column-wise
  Rounding rounding = Rounding::nearest_even;
  std::uint64_t seed = 0, counter = 0;
};

struct Nvfp4Settings {
  TileShape tile{1, 16};  // {1, 16}; {16, 16} for weights
  // The 16-point random Hadamard transform on each row's groups of 16 before the amax
  // (cols must be a multiple of 16; only with 1 x 16 tiles): y = x diag(s) H16 / 4.
  bool hadamard = false;
  Rounding rounding = Rounding::nearest_even;  // stochastic for gradients
  std::uint64_t seed = 0, counter = 0;
};

struct Fp8BlockSettings {
  Format element = Format::float8_e4m3;
  TileShape tile{1, 128};  // {128, 128} for weights; {rows, cols} for current scaling
  bool power_of_two = true;
  float epsilon = 0.0f;
  Rounding rounding = Rounding::nearest_even;
  std::uint64_t seed = 0, counter = 0;
};

// Quantize the row-major rows x cols matrix x. Throws mantissa::Error naming the setting for
// a negative size, a tile dimension below 1, an element format the recipe does not take, or
// a Hadamard transform the shape does not allow.
BlockQuantized quantize_mx(const float* x, std::int64_t rows, std::int64_t cols,
                           const MxSettings& s);
BlockQuantized quantize_nvfp4(const float* x, std::int64_t rows, std::int64_t cols,
                              const Nvfp4Settings& s);
BlockQuantized quantize_fp8_blocks(const float* x, std::int64_t rows, std::int64_t cols,
                                   const Fp8BlockSettings& s);

// NVFP4 in parts: the global amax quantize_nvfp4 scales by (the largest |x| bits of the
// matrix, after the rotation where `hadamard`: a NaN is above every number), and the
// quantization of rows of a matrix whose global amax is given (x rotated here where
// s.hadamard; s.counter at the part's first element). quantize_nvfp4 is the part that is the
// whole matrix; parts of one matrix give its bits band for band.
float nvfp4_global_amax(const float* x, std::int64_t rows, std::int64_t cols, bool hadamard);
BlockQuantized quantize_nvfp4_part(const float* x, std::int64_t rows, std::int64_t cols,
                                   const Nvfp4Settings& s, float global_amax);
// One NVFP4 tile's scales under the global encode scale (nvfp4_global_encode_scale): the
// e4m3 decode scale (NaN for a NaN amax: a NaN tile) and the elements' multiplier, as the
// quantizers find them.
struct Nvfp4TileScale {
  float decode, encode;
};
Nvfp4TileScale nvfp4_tile_scale(float amax, float global_encode);
// The same for n tiles' amaxes (as float32 bits) in one branch-free loop (the e4m3 rounding
// by bit arithmetic, which vectorizes); the same bits as nvfp4_tile_scale's codec.
void nvfp4_tile_scales(const std::uint32_t* amax_bits, std::size_t n, float global_encode,
                       float* decode, float* encode);

// The scalar twins: one element at a time, the same bits.
BlockQuantized quantize_mx_ref(const float* x, std::int64_t rows, std::int64_t cols,
                               const MxSettings& s);
BlockQuantized quantize_nvfp4_ref(const float* x, std::int64_t rows, std::int64_t cols,
                                  const Nvfp4Settings& s);
BlockQuantized quantize_fp8_blocks_ref(const float* x, std::int64_t rows, std::int64_t cols,
                                       const Fp8BlockSettings& s);

// The values a quantized matrix stands for (rows * cols floats): element * scale, times
// tensor_scale for NVFP4 ((element * scale) * tensor_scale in float32).
void dequantize(const BlockQuantized& q, float* out);

// NVFP4's rotation in place on each row's groups of 16 (cols a multiple of 16): the fast
// Walsh-Hadamard butterfly on s * x in float32 (pairs (i, i + h) for h = 1, 2, 4, 8 as
// (a + b, a - b)), then times 1/4; vectorized (AVX2), the same float32 results. Throws
// mantissa::Error when cols is not a multiple of 16.
inline constexpr std::int8_t kNvfp4HadamardSigns[16] = {1,  1,  1,  -1, 1,  -1, -1, -1,
                                                        -1, -1, -1, 1,  -1, 1,  -1, -1};
void hadamard16_rows(float* x, std::int64_t rows, std::int64_t cols);
// Its scalar twin (the butterfly element by element; the reference quantizer's rotation).
void hadamard16_rows_ref(float* x, std::int64_t rows, std::int64_t cols);

}  // namespace mantissa::numerics
