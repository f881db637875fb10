#pragma once
// Internal: the block quantizers' fast bands (block_bands.cpp), on the AVX-512 units or, where
// AVX2 is the best path, on AVX2 (block_bands_avx2.hpp), band of tile rows by band on all
// threads: the tile amaxes, the quantizer's scale per tile, then each element
// scaled, rounded to the element format (nearest-even, saturating) in float32 bit
// arithmetic and written as a bfloat16 value (quantize_to_bf16) or as its code
// (quantize_packed). The same bits as the numerics quantizers; the callers fall back to the
// codec paths where these do not take the spec.
#include <optional>

#include "block_bands_avx512.hpp"
#include "mantissa/quant/block_operand.hpp"

namespace mantissa::quant::detail {

using numerics::Format;

Format element_of(const BlockSpec& spec);
// Whether spec's tile is at least 1 x 1 and its element format one its recipe has (MX: the
// block element formats; fp8 blocks: e4m3 or e5m2, with a finite epsilon >= 0): the fast paths take
// nothing else, so that the numerics quantizers refuse it with their message, outside any parallel
// region.
bool valid_settings(const BlockSpec& spec);

// An element format's grid in float32 terms, and its codec for one element (nearest-even,
// saturating): what the bands round with.
BandGrid grid_of(Format element);
ElementCodec codec_of(Format element);

// quantize_to_bf16's answer and values on the bands; nullopt where they do not take the input
// (the scalar path, a tile neither one column wide nor a multiple of 16 columns wide).
std::optional<bool> quantize_to_bf16_bands(const void* x, Format x_format, std::int64_t rows,
                                           std::int64_t cols, const BlockSpec& spec,
                                           std::uint16_t* out);

// quantize_packed's result on the bands for MX and fp8 blocks with nearest-even
// rounding: one-byte elements, or fp4 two a byte where cols is even; nullopt where they do
// not take the input.
std::optional<PackedBlocks> quantize_packed_bands(const void* x, Format x_format, std::int64_t rows,
                                                  std::int64_t cols, const BlockSpec& spec);

}  // namespace mantissa::quant::detail
