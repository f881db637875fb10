#pragma once
// Elementwise kernels on float32 buffers. The _ref twins compute in double.
#include <cstdint>

namespace mantissa::kernels {

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu_forward(const float* x, float* y, std::int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n);
void gelu_forward_ref(const float* x, float* y, std::int64_t n);
void gelu_backward_ref(const float* x, const float* dy, float* dx, std::int64_t n);

// On bfloat16 values (their bits), results rounded to bfloat16 (nearest even, NaN quieted):
// the bits of decoding the inputs, the float32 kernel above and encoding, without the float32
// copies (in registers where the active SIMD path is avx512; through a small float32 tile on
// the others). The _ref twins compute exactly that way, element by element.
void gelu_forward_bf16(const std::uint16_t* x, std::uint16_t* y, std::int64_t n);
void gelu_backward_bf16(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                        std::int64_t n);
void gelu_forward_bf16_ref(const std::uint16_t* x, std::uint16_t* y, std::int64_t n);
void gelu_backward_bf16_ref(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                            std::int64_t n);

// a + b in float32, not rounded (two gradients of one tensor summed in a backward), each
// operand bfloat16 bits or float32 values: the bits of decoding the bfloat16 ones and adding.
struct Bf16OrFloat32 {
  const void* data;
  bool bf16;  // else float32
};
void sum_to_float32(Bf16OrFloat32 a, Bf16OrFloat32 b, float* y, std::int64_t n);
void sum_to_float32_ref(Bf16OrFloat32 a, Bf16OrFloat32 b, float* y, std::int64_t n);

// sums[j] += row r's element j, for each of `rows` bfloat16 rows (ld elements apart) in
// order, j < n: a linear layer's bias gradient from its bfloat16 output gradient.
void add_bf16_rows(const std::uint16_t* g, std::int64_t rows, std::int64_t ld, std::int64_t n,
                   float* sums);
void add_bf16_rows_ref(const std::uint16_t* g, std::int64_t rows, std::int64_t ld, std::int64_t n,
                       float* sums);

// a + b in float32, rounded to bfloat16 (the residual add of a bfloat16 run).
void add_bf16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y, std::int64_t n);
void add_bf16_ref(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y, std::int64_t n);

// exp, 8 lanes at a time (degree-6 polynomial after range reduction, < 2 ulp): 0 below
// -86.99 (where exp nears the smallest normal float), inf above 88.37, NaN kept.
void exp_forward(const float* x, float* y, std::int64_t n);
void exp_forward_ref(const float* x, float* y, std::int64_t n);  // std::exp in double

void relu_forward(const float* x, float* y, std::int64_t n);
void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace mantissa::kernels
