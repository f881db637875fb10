#pragma once
// The fused bf16 attention heads' row passes, each in one sweep: AVX-512 where the CPU has
// AVX-512F/BW (every CPU the heads run on: AVX512-BF16 or AMX), else their scalar twins, which
// compute the same bits.
//
// probabilities_bf16: p = exp(s - shift) for the first `valid` entries of a row (the same
// formula, lane for lane, as vector_exp.hpp's exp_avx2 and exp_scalar), rounded to bfloat16
// (nearest even, NaN quieted), written as bf16 bits and, when p_out is not null, as the
// float32 value of those bits; entries valid..width-1 get zeros.
//
// scaled_log_sum_exp: s[c] *= scale for the first n entries, in place, then the row's
// log-sum-exp l = m + log(sum_c exp(s[c] - m)), m the largest s[c] (NaNs skipped; -inf for
// n = 0), with exp as above and the sum added in vector_exp.hpp's exp_shifted order (eight
// running lane sums over whole groups of eight, those eight added in lane order, then the
// rest one by one), so that every path gives the same float.
//
// score_gradients_bf16: ds = (p (dp - delta)) scale for n entries (float32, in that order),
// rounded to bfloat16 and written as bits; entries n..width-1 get zeros.
#include <cstdint>

namespace mantissa::kernels {

void probabilities_bf16(const float* s, std::int64_t valid, std::int64_t width, float shift,
                        float* p_out, std::uint16_t* bits);
void probabilities_bf16_ref(const float* s, std::int64_t valid, std::int64_t width, float shift,
                            float* p_out, std::uint16_t* bits);
float scaled_log_sum_exp(float* s, std::int64_t n, float scale);
float scaled_log_sum_exp_ref(float* s, std::int64_t n, float scale);
void score_gradients_bf16(const float* dp, const float* p, float delta, float scale, std::int64_t n,
                          std::int64_t width, std::uint16_t* bits);
void score_gradients_bf16_ref(const float* dp, const float* p, float delta, float scale,
                              std::int64_t n, std::int64_t width, std::uint16_t* bits);

}  // namespace mantissa::kernels
