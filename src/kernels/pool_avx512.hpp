#pragma once
// Internal: relu_max_pool2d's 2 x 2, stride 2 windows 16 outputs at a time (pool_avx512.cpp,
// compiled with -mavx512f -mavx512bw), entered by pool.cpp only where the active SIMD path is
// avx512.
// Bit for bit the results of the scalar window loop (relu_max_pool2d_forward_ref) and of the
// scatter backward, on any width and height (masked tails; an odd last row or column belongs
// to no window).
#include <cstdint>

namespace mantissa::kernels::detail {

// One plane's output row oy: y and argmax for ox in [0, ow), ow = width / 2.
void relu_max_pool_2x2_row_avx512(const float* xp, std::int64_t width, std::int64_t oy, float* yp,
                                  std::int32_t* ap);

// One plane's input gradient [height, width] from its outputs' gradients dy and argmax
// [height / 2, width / 2]: each input gets 0 + dy of the window whose argmax it is, else +0.
void relu_max_pool_2x2_backward_avx512(const float* dy, const std::int32_t* argmax,
                                       std::int64_t height, std::int64_t width, float* dx);

// The same two on bfloat16 bit patterns, with the same results as the float32 kernels on the
// decoded values: each window's pair of columns is one 32-bit word (the even column its low
// half), so a load splits them with a shift and a mask; results are bfloat16 values (a
// maximum of candidates and 0; 0 + dy), stored as their high halves.
void relu_max_pool_2x2_row_bf16_avx512(const std::uint16_t* xp, std::int64_t width, std::int64_t oy,
                                       std::uint16_t* yp, std::int32_t* ap);
void relu_max_pool_2x2_backward_bf16_avx512(const std::uint16_t* dy, const std::int32_t* argmax,
                                            std::int64_t height, std::int64_t width,
                                            std::uint16_t* dx);

}  // namespace mantissa::kernels::detail
