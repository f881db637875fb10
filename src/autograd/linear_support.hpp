#pragma once
// Internal: what linear and its quantized forms share: the shape checks, writing the GEMM's
// finished blocks and the bias gradient.
#include <optional>

#include "op_support.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd::detail {

struct LinearSizes {
  std::int64_t rows, in, out;
};

// x [..., in], weight [out, in], bias [out] or undefined; else mantissa::Error naming linear.
LinearSizes linear_sizes(const Variable& x, const Variable& weight, const Variable& bias);

// What a linear node's backward keeps of the forward's shapes (the fp8 and block-scaled
// nodes derive from it).
struct LinearNodeShape {
  std::int64_t rows = 0, in = 0, out = 0;
  bool has_bias = false;
  Shape x_shape;
  void set_shape(const LinearSizes& s, const Shape& x, bool bias) {
    rows = s.rows;
    in = s.in;
    out = s.out;
    has_bias = bias;
    x_shape = x;
  }
};

// The output's shape: x's with the last dimension `out`.
Shape linear_output_shape(const Shape& x, std::int64_t out);

// An epilogue writing finished blocks into rows of `y` (contiguous, `ld` elements per row,
// starting at element `base`): each value times `factor` when given (fp8's scales undone),
// plus `bias` per column when given, encoded to y's format. With a probe (a sampled step),
// what the encoding lost is recorded.
kernels::GemmEpilogue write_rows(Tensor& y, std::int64_t base, std::int64_t ld, const float* bias,
                                 const RoundingProbe* probe = nullptr,
                                 std::optional<float> factor = std::nullopt);

// The bias gradient: column sums of g [rows, out] (any format) in float32, in row order.
Tensor bias_gradient(const Tensor& g, std::int64_t rows, std::int64_t out);

// g [rows, out] (contiguous, any format) decoded into `values` (rows * out floats) on all
// threads; with `column_sums` (out floats, zero on entry), in the same pass the column sums
// bias_gradient makes, bit for bit (the same additions in the same order).
void decode_with_column_sums(const Tensor& g, std::int64_t rows, std::int64_t out, float* values,
                             float* column_sums);

// A linear layer's backward products: dx = G W ([rows, out] x [out, in]) and dW = G^T X
// ([out, rows] x [rows, in], G read transposed).
inline kernels::GemmShape input_grad_product(const LinearSizes& s) {
  return kernels::GemmShape::dense(s.rows, s.in, s.out);
}
inline kernels::GemmShape weight_grad_product(const LinearSizes& s) {
  return kernels::GemmShape::dense(s.out, s.in, s.rows, true, false);
}

// The operand G [rows, out] (contiguous) of a linear layer's backward products dx = G W (when
// `dx`) and dW = G^T X (when `dw`). Where the route of one of them would copy G to float32
// (kernels::gemm_copies_to_float32: oneDNN's fp32 matmul with G stored in 16 or 8 bits) and
// G's float32 values fit 16 MiB (the budget of oneDNN's own scratch), G is decoded once into
// a per-thread buffer kept for the next call, with its column sums added into `column_sums`
// when given, and `decoded` is true: both products read the float32 values in place (the
// same values: decoding is exact). Likewise G stored as fp8 codes that the routes would copy
// to bfloat16 (kernels::gemm_copies_to_bf16: oneDNN's bf16 matmul) is converted to bfloat16
// once, when no column sums are asked for and the copy fits the same budget. Else G as
// stored, and nothing summed.
struct BackwardOperand {
  kernels::Operand g;
  bool decoded = false;
};
BackwardOperand linear_backward_operand(const Tensor& g, const LinearSizes& s,
                                        const kernels::GemmPrecision& gp, bool dx, bool dw,
                                        float* column_sums);

}  // namespace mantissa::autograd::detail
