#pragma once
// Internal: the AVX-512 bodies of mantissa/kernels/attention_rows.hpp (attention_rows_avx512.cpp,
// compiled with -mavx512f -mavx512bw), entered only after a CPUID check.
#include <cstdint>

namespace mantissa::kernels::detail {

void probabilities_bf16_avx512(const float* s, std::int64_t valid, std::int64_t width, float shift,
                               float* p_out, std::uint16_t* bits);
float scaled_log_sum_exp_avx512(float* s, std::int64_t n, float scale);
void score_gradients_bf16_avx512(const float* dp, const float* p, float delta, float scale,
                                 std::int64_t n, std::int64_t width, std::uint16_t* bits);

}  // namespace mantissa::kernels::detail
