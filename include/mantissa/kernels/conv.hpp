#pragma once
// 2-D convolution helpers (im2col / col2im, so the product runs on the GEMM path with its
// precision rules; conv.cpp) and max pooling (pool.cpp, pool_avx512.cpp), on float32 NCHW
// buffers.
#include <cstdint>

namespace mantissa::kernels {

struct Conv2dGeometry {
  std::int64_t channels, height, width;  // input, per image
  std::int64_t kernel_h, kernel_w, stride, padding;
  std::int64_t out_h() const { return (height + 2 * padding - kernel_h) / stride + 1; }
  std::int64_t out_w() const { return (width + 2 * padding - kernel_w) / stride + 1; }
  std::int64_t patch() const { return channels * kernel_h * kernel_w; }
};

// cols[(c*kh + i)*kw + j][oy*out_w + ox] = x[c][oy*stride - pad + i][ox*stride - pad + j],
// rows `ld` floats apart (ld = out_h * out_w for one image; batch * that to lay the images of
// a batch side by side, so one GEMM covers the whole batch).
void im2col(const float* x, const Conv2dGeometry& g, float* cols, std::int64_t ld);
// The adjoint: accumulates cols back into dx (dx is added to, not overwritten).
void col2im(const float* cols, const Conv2dGeometry& g, float* dx, std::int64_t ld);
// Direct convolution of one image, in double: the twin of im2col + gemm.
void conv2d_ref(const float* x, const float* w, const float* bias, std::int64_t out_channels,
                const Conv2dGeometry& g, float* y);

// Max pooling of `planes` planes of height x width; argmax holds the winning input index.
void max_pool2d_forward(const float* x, std::int64_t planes, std::int64_t height,
                        std::int64_t width, std::int64_t kernel, std::int64_t stride, float* y,
                        std::int32_t* argmax);
void max_pool2d_backward(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                         std::int64_t in_size, std::int64_t out_size, float* dx);

// max_pool2d of relu(x) in one pass: y = max(0, the window's maximum) (relu and max commute;
// +0 where the maximum is not above 0), argmax the first index of the window's maximum where
// that maximum is above 0, else -1 (the gradient then reaches no input: relu's is 0 there).
// The same results as relu (which maps NaN to 0) then max_pool2d: a NaN is never a window's
// maximum. 2 x 2 windows of stride 2 run 16 outputs at a time on AVX-512 (any width), 8 on
// AVX2 (the rest of a row by the scalar loop).
void relu_max_pool2d_forward(const float* x, std::int64_t planes, std::int64_t height,
                             std::int64_t width, std::int64_t kernel, std::int64_t stride, float* y,
                             std::int32_t* argmax);
// The scalar twin: the same window loop as max_pool2d_forward's.
void relu_max_pool2d_forward_ref(const float* x, std::int64_t planes, std::int64_t height,
                                 std::int64_t width, std::int64_t kernel, std::int64_t stride,
                                 float* y, std::int32_t* argmax);
// The input gradient of `planes` planes of height x width: each input gets 0 + dy of the output
// whose argmax it is (none where that is -1), else +0. On the calling thread; 2 x 2 windows of
// stride 2 run 16 outputs at a time on AVX-512.
void relu_max_pool2d_backward(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                              std::int64_t height, std::int64_t width, std::int64_t kernel,
                              std::int64_t stride, float* dx);
// The scalar twin (any windows): dx = 0, then dy added at each output's argmax.
void relu_max_pool2d_backward_ref(const float* dy, const std::int32_t* argmax, std::int64_t planes,
                                  std::int64_t in_size, std::int64_t out_size, float* dx);

// relu_max_pool2d on bfloat16 bit patterns, 2 x 2 windows of stride 2 on AVX-512, without a
// float32 copy: the outputs (a window's maximum above 0, or +0, is a bfloat16 value), argmax and
// input gradients (0 + dy) the float32 kernels give on the decoded values, bit for bit. On all
// threads. They return false, writing nothing, for other windows or another SIMD path (the
// caller then decodes).
bool relu_max_pool2d_forward_bf16(const std::uint16_t* x, std::int64_t planes, std::int64_t height,
                                  std::int64_t width, std::int64_t kernel, std::int64_t stride,
                                  std::uint16_t* y, std::int32_t* argmax);
bool relu_max_pool2d_backward_bf16(const std::uint16_t* dy, const std::int32_t* argmax,
                                   std::int64_t planes, std::int64_t height, std::int64_t width,
                                   std::int64_t kernel, std::int64_t stride, std::uint16_t* dx);

}  // namespace mantissa::kernels
