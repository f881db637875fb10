#pragma once
// A 2-D convolution's three products with the matrix products' precision rules (docs/design.md
// section 3: sources hold H values, products exact, sums in float32), each on a route chosen
// by measurement with the matrix products' mechanism (gemm_route.hpp, docs/engine.md
// "Convolutions: routes"). The routes:
//   fp32              mantissa's own code on fp32 FMA units: for stride 1 and at most 32
//                     values a patch (a first layer of 1 or 3 channels), the forward and the
//                     weight gradient as direct convolutions (conv/direct_conv.hpp); else, and
//                     for the input gradient, im2col + mantissa's GEMM;
//   bf16, amx         im2col + mantissa's GEMM on that route, col2im for the input gradient;
//   onednn_fp32       oneDNN's fp32 convolution primitives (every format: products of H
//                     values are exact in float32);
//   onednn_bf16       oneDNN's bf16 convolution primitives with float32 results (values in one
//                     bf16 pass: bfloat16, fp8, float16 / cbfloat16 at POL 2).
// Layouts: activations NCHW, weights OIHW, as mantissa's tensors hold them; the oneDNN routes
// reorder into the layout their primitive wants and back inside the call.
#include <cstdint>

#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels {

// The buffers of one product (those it does not use stay null):
//   conv_forward           reads x, w, bias (float32, when the key has a bias); writes y
//   conv_backward_data     reads dy, w; writes dx (overwritten)
//   conv_backward_weights  reads x, dy; writes dw and, with a bias, db (overwritten)
// x [batch, channels, h, w], w [out_channels, channels, kernel_h, kernel_w],
// y and dy [batch, out_channels, out_h, out_w], all dense. x, w and dy hold values of the
// precision's format (the caller rounds them to H), stored in any format.
struct ConvBuffers {
  Operand x, w, dy;
  const float* bias = nullptr;
  float* y = nullptr;
  float* dx = nullptr;
  float* dw = nullptr;
  float* db = nullptr;
  // conv_forward may also be offered y_stored, a buffer of y's elements in y_format (nearest-
  // even from the float32 result, as numerics::convert_array rounds): a route that can round
  // its results there while they are in cache (the direct kernels) writes y_stored instead of
  // y, and the product returns true.
  void* y_stored = nullptr;
  Format y_format = Format::float32;
};

// Runs one product under precision.route: a named route as named (onednn_bf16 asked for values
// that need more than one bf16 pass runs on bf16, which makes the passes), automatic the
// route measured fastest for the product's key (conv_key), once per key and process, cached
// per machine. GemmAlgorithm::decomposed runs on the fp32 GEMM route (its passes). Returns
// whether the forward's result went to y_stored (ConvBuffers).
bool conv2d_product(ProductKind kind, const ConvKey& shape, const ConvBuffers& b,
                    const GemmPrecision& precision);
// The same on one route (not automatic); throws mantissa::Error when this CPU cannot run it
// for the key (route_unavailable).
bool conv2d_product_on(MatmulRoute route, ProductKind kind, const ConvKey& shape,
                       const ConvBuffers& b, const GemmPrecision& precision);

// The reference: im2col + mantissa's GEMM on the fp32 route (col2im for the input gradient),
// every shape; the twin the direct kernels are measured against (bench_conv).
void conv2d_product_ref(ProductKind kind, const ConvKey& shape, const ConvBuffers& b,
                        const GemmPrecision& precision);

// The sums of dy [batch, channels, spatial] per channel into db [channels] (float32, each
// channel's sum in a fixed order of 16 float32 partial sums, independent of the thread count).
void conv2d_bias_gradient(const float* dy, std::int64_t batch, std::int64_t channels,
                          std::int64_t spatial, float* db);

}  // namespace mantissa::kernels
