#pragma once
// Internal: the fused bf16 heads' row passes in one sweep each, AVX-512 (attention_rows_avx512.cpp,
// entered only where the heads run: AVX512-BF16 or AMX CPUs, which have AVX-512F/BW), with
// scalar twins that compute the same bits (attention_rows.cpp).
//
// probabilities_bf16: p = exp(s - shift) for the first `valid` entries of a row (the same
// formula, lane for lane, as vector_exp.hpp's exp_avx2 and exp_scalar), rounded to bfloat16
// (nearest even, NaN quieted), written as bf16 bits and, when p_out is not null, as the
// float32 value of those bits; entries valid..width-1 get zeros.
//
// score_gradients_bf16: ds = (p (dp - delta)) scale for n entries (float32, in that order),
// rounded to bfloat16 and written as bits; entries n..width-1 get zeros.
#include <cstdint>

namespace mantissa::kernels::attention_detail {

void probabilities_bf16(const float* s, std::int64_t valid, std::int64_t width, float shift,
                        float* p_out, std::uint16_t* bits);
void probabilities_bf16_ref(const float* s, std::int64_t valid, std::int64_t width, float shift,
                            float* p_out, std::uint16_t* bits);
void score_gradients_bf16(const float* dp, const float* p, float delta, float scale, std::int64_t n,
                          std::int64_t width, std::uint16_t* bits);
void score_gradients_bf16_ref(const float* dp, const float* p, float delta, float scale,
                              std::int64_t n, std::int64_t width, std::uint16_t* bits);

namespace detail {
void probabilities_bf16_avx512(const float* s, std::int64_t valid, std::int64_t width, float shift,
                               float* p_out, std::uint16_t* bits);
void score_gradients_bf16_avx512(const float* dp, const float* p, float delta, float scale,
                                 std::int64_t n, std::int64_t width, std::uint16_t* bits);
}  // namespace detail

}  // namespace mantissa::kernels::attention_detail
