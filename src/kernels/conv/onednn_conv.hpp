#pragma once
// Internal: a convolution's three products on oneDNN's convolution primitives, fp32 or bf16
// sources with float32 results. Primitives, their memory descriptors and the reorders between
// mantissa's plain layouts (NCHW activations, OIHW weights) and the layouts oneDNN chooses
// (e.g. nChw16c) are made once per shape and type and cached for the process; the reorders run
// at the primitive's edges, inside these calls.
#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels::conv_detail {

// The element type of a call's sources (x, w, dy): float32, or bf16 bit patterns
// (std::uint16_t). Results (y, dx, dw, db) are always float32.
enum class SourceType : std::uint8_t { f32, bf16 };

// y [batch, out_channels, out_h, out_w] = conv(x [batch, channels, h, w],
// w [out_channels, channels, kernel_h, kernel_w]) (+ bias [out_channels], float32, when
// c.bias). Throws mantissa::Error when oneDNN cannot make the primitive.
void onednn_conv_forward(const ConvKey& c, SourceType type, const void* x, const void* w,
                         const float* bias, float* y);
// dx [batch, channels, h, w] = the adjoint of the forward applied to dy (overwritten).
void onednn_conv_backward_data(const ConvKey& c, SourceType type, const void* dy, const void* w,
                               float* dx);
// dw [out_channels, channels, kernel_h, kernel_w] (overwritten) from x and dy, and db
// [out_channels] (the sums of dy per output channel) when c.bias.
void onednn_conv_backward_weights(const ConvKey& c, SourceType type, const void* x, const void* dy,
                                  float* dw, float* db);

// Whether oneDNN has bf16 convolutions (not its reference code) on this CPU, asked once.
bool onednn_bf16_conv_available();

}  // namespace mantissa::kernels::conv_detail
