#pragma once
// Internal: GELU (tanh form) 16 lanes at a time (pointwise_avx512.cpp, compiled with -mavx512f
// -mavx512bw), entered by pointwise.cpp only where the active SIMD path is avx512. The same
// formulas as the AVX2 path (sigmoid(2u) with u = sqrt(2/pi) (x + 0.044715 x^3), exp as
// vector_exp.hpp computes it), its results within an ulp or two of theirs.
#include <cstdint>

namespace mantissa::kernels::detail {

// GELU's backward caps v^2 here on both paths: s (1 - s) is exactly 0 long before (|v| > 20),
// and uncapped, du would reach inf past |v| = 1e19, making 0 * inf.
constexpr float kGeluSquareCap = 1e10f;

void gelu_forward_avx512(const float* x, float* y, std::int64_t n);
void gelu_backward_avx512(const float* x, const float* dy, float* dx, std::int64_t n);

// The same on bfloat16 bits, in registers (bf16_lanes_avx512.hpp): the bits of decoding, the
// float32 kernel above and encoding nearest-even. `unit`: round with AVX512-BF16's conversion
// instruction (only where the CPU has it), else with integer arithmetic.
void gelu_forward_bf16_avx512(const std::uint16_t* x, std::uint16_t* y, std::int64_t n, bool unit);
void gelu_backward_bf16_avx512(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                               std::int64_t n, bool unit);
void add_bf16_avx512(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                     std::int64_t n, bool unit);
// The same three rounded by AVX512-BF16's conversion instruction (pointwise_avx512_bf16.cpp,
// compiled for it): only where the CPU has AVX512-BF16.
void gelu_forward_bf16_by_unit(const std::uint16_t* x, std::uint16_t* y, std::int64_t n);
void gelu_backward_bf16_by_unit(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                                std::int64_t n);
void add_bf16_by_unit(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                      std::int64_t n);
void add_bf16_rows_avx512(const std::uint16_t* g, std::int64_t rows, std::int64_t ld,
                          std::int64_t n, float* sums);

// a + b to float32, each operand bfloat16 bits (A16, B16) or float32.
template <bool A16, bool B16>
void sum_to_float32_avx512(const void* a, const void* b, float* y, std::int64_t n);

}  // namespace mantissa::kernels::detail
