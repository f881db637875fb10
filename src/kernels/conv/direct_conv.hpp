#pragma once
// Internal: convolutions with few values per patch (an image model's first layer: 1 or 3 input
// channels) computed directly on fp32 FMA units, 16 output columns a step (AVX-512; 8 on
// AVX2), instead of as an im2col product whose inner dimension would be only channels x
// kernel_h x kernel_w.
// The fp32 route runs them where they fit (conv_route.hpp); the im2col + GEMM reference is
// what tests compare them with. Sources hold H values in any format (decoded to float32);
// products of two H values are exact in float32 and the sums are float32, in a fixed order
// independent of the thread count.
#include "../gemm/passes.hpp"
#include "mantissa/kernels/conv_route.hpp"

namespace mantissa::kernels::conv_detail {

// The most values a patch may have for the direct kernels (3 channels of 3 x 3, 1 of 5 x 5).
inline constexpr std::int64_t kDirectMaxPatch = 32;

// The sources' values are read as `part` of them (gemm_detail::Part: bfloat16-rounded where
// a pass at POL 2 multiplies float16 or cbfloat16 values so).

// Whether the direct kernels take this convolution: stride 1 and at most kDirectMaxPatch values
// per patch.
bool direct_conv_fits(const ConvKey& c);

// y [batch, out_channels, out_h, out_w] = the sum over each patch of w times x, then + bias
// (float32, when c.bias); the sum runs over the patch in (channel, row, column) order. With
// y_stored, the results are written there in y_format instead (rounded as
// numerics::convert_array rounds float32, a block of rows at a time), and y is not touched.
void direct_conv_forward(const ConvKey& c, const Operand& x, const Operand& w, const float* bias,
                         gemm_detail::Part part, float* y, void* y_stored, Format y_format);

// dw [out_channels, channels, kernel_h, kernel_w] (overwritten) and, when db is given, db
// [out_channels] (the sums of the values of dy read): the sums over the batch and the output
// positions, in blocks of 16 images whose partial sums are added in block order.
void direct_conv_backward_weights(const ConvKey& c, const Operand& x, const Operand& dy,
                                  gemm_detail::Part part, float* dw, float* db);

}  // namespace mantissa::kernels::conv_detail
