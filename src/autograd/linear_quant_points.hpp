#pragma once
// Internal: the quantization points of a block-scaled linear layer (precision/recipe.hpp).
// Every GEMM operand is quantized here, from the high-precision tensor, once per product it
// feeds: the forward's x and W along the input features, the backward's g along the output
// features and W along them (input gradient), g and x along the rows (weight gradient). A
// tensor's two copies are quantized independently, as the reference recipes do.
#include <cstdint>
#include <memory>

#include "mantissa/precision/recipe.hpp"
#include "mantissa/quant/block_operand.hpp"
#include "op_support.hpp"

namespace mantissa::autograd::detail {

// Which copy of a matrix [rows, cols]: tiles along its last dimension (a row-wise copy) or
// along its rows (a column-wise copy).
enum class Along : std::uint8_t { last, rows };

// One quantized copy: packed at its format's width (q), or, for a copy a product reads once
// right away, its bfloat16 values (`values`, power-of-two scales only). `transposed`: the
// transpose, [cols, rows rounded up to 16] with zero rows appended (NVFP4's weight-gradient
// operands, rotated along the rows).
struct QuantCopy {
  std::shared_ptr<const quant::PackedBlocks> q;
  Tensor values;
  bool transposed = false;
  bool defined() const { return q != nullptr || values.defined(); }
  std::int64_t cols() const { return q ? q->cols : values.shape()[1]; }
  quant::BlockOperand operand() const {
    if (q) return {*q};
    return {static_cast<const std::uint16_t*>(values.raw_data()), values.shape()[0],
            values.shape()[1]};
  }
};

// Whether a copy is kept (for the backward, or a weight's for the step: held at its format's
// width) or read once.
enum class Use : std::uint8_t { kept, once };

// The copy of t (contiguous, any format, `rows` x `cols` elements) for `role` with tiles
// `along`, as layer `quant`'s recipe says (stochastic rounding draws from its stream). A
// copy read once may come as values.
QuantCopy quantize_copy(const Tensor& t, std::int64_t rows, std::int64_t cols,
                        precision::LinearQuant& quant, precision::Fp8Slot role, Along along,
                        Use use);

// Whether the recipe's row-wise and column-wise copies of `role` are one and the same (2-D
// tiles, or one scale per tensor): then one quantization serves both products.
bool one_copy(const precision::LayerRecipe& r, precision::Fp8Slot role);

}  // namespace mantissa::autograd::detail
