#include "mantissa/kernels/attention_rows.hpp"

#include "attention_parts.hpp"
#include "attention_rows_avx512.hpp"
#include "lane_sums.hpp"
#include "mantissa/kernels/bf16_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mantissa/numerics/cpu_features.hpp"
#include "vector_exp.hpp"

namespace mantissa::kernels {
namespace {

// bfloat16 bits of x, nearest even, NaN quieted (numerics' bfloat16 encoder, in one line).
std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float bf16_value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

bool vector_units() {
  const numerics::CpuFeatures& f = numerics::cpu_features();
  return f.avx512f && f.avx512bw;
}

}  // namespace

void probabilities_bf16_ref(const float* s, std::int64_t valid, std::int64_t width, float shift,
                            float* p_out, std::uint16_t* bits) {
  for (std::int64_t c = 0; c < width; ++c) {
    const std::uint16_t b = c < valid ? bf16_bits(detail::exp_scalar(s[c] - shift)) : 0;
    bits[c] = b;
    if (p_out != nullptr) p_out[c] = bf16_value(b);
  }
}

float scaled_log_sum_exp_ref(float* s, std::int64_t n, float scale) {
  for (std::int64_t c = 0; c < n; ++c) s[c] *= scale;
  const float m = detail::row_max(s, n);
  float lane[8] = {};
  std::int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    for (int l = 0; l < 8; ++l) lane[l] += detail::exp_scalar(s[c + l] - m);
  }
  float sum = 0;
  for (const float l : lane) sum += l;
  for (; c < n; ++c) sum += detail::exp_scalar(s[c] - m);
  return m + std::log(sum);
}

void score_gradients_bf16_ref(const float* dp, const float* p, float delta, float scale,
                              std::int64_t n, std::int64_t width, std::uint16_t* bits) {
  for (std::int64_t c = 0; c < width; ++c) {
    bits[c] = c < n ? bf16_bits(p[c] * (dp[c] - delta) * scale) : 0;
  }
}

void probabilities_bf16(const float* s, std::int64_t valid, std::int64_t width, float shift,
                        float* p_out, std::uint16_t* bits) {
  if (vector_units()) {
    detail::probabilities_bf16_avx512(s, valid, width, shift, p_out, bits);
  } else {
    probabilities_bf16_ref(s, valid, width, shift, p_out, bits);
  }
}

float scaled_log_sum_exp(float* s, std::int64_t n, float scale) {
  return vector_units() ? detail::scaled_log_sum_exp_avx512(s, n, scale)
                        : scaled_log_sum_exp_ref(s, n, scale);
}

void score_gradients_bf16(const float* dp, const float* p, float delta, float scale, std::int64_t n,
                          std::int64_t width, std::uint16_t* bits) {
  if (vector_units()) {
    detail::score_gradients_bf16_avx512(dp, p, delta, scale, n, width, bits);
  } else {
    score_gradients_bf16_ref(dp, p, delta, scale, n, width, bits);
  }
}

}  // namespace mantissa::kernels

namespace mantissa::kernels::attention_detail {
namespace {

// The one-pass rows apply: probabilities and score gradients rounded to bfloat16 and to
// nothing else.
bool one_pass(const AttentionPrecision& pr, bool to_bf16) {
  return pr.half == numerics::Format::bfloat16 && !pr.softmax_in_half && !to_bf16;
}

}  // namespace

void softmax_rows_bf16(float* s, std::int64_t i0, std::int64_t rows, std::int64_t cols, float scale,
                       const AttentionPrecision& pr, bool to_bf16, float* lse_out,
                       const float* lse_in, float* tmp, bool p_out, std::uint16_t* bits,
                       std::int64_t ldb) {
  if (!one_pass(pr, to_bf16)) {
    softmax_rows(s, i0, rows, cols, scale, pr, to_bf16, lse_out, lse_in, tmp);
    to_bf16_rows(s, rows, cols, cols, bits, ldb);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    float* sr = s + r * cols;
    const std::int64_t valid = i0 + r + 1;  // keys 0..i0+r
    float l;
    if (lse_out != nullptr) {
      l = lse_out[r] = scaled_log_sum_exp(sr, valid, scale);
    } else {
      for (std::int64_t c = 0; c < valid; ++c) sr[c] *= scale;
      l = lse_in[r];
    }
    std::uint16_t* br = bits + r * ldb;
    probabilities_bf16(sr, valid, cols, l, p_out ? sr : nullptr, br);
    std::fill(br + cols, br + ldb, std::uint16_t{0});
  }
}

void score_gradients_bf16_rows(float* dp, const float* p, const float* delta, std::int64_t i0,
                               std::int64_t rows, std::int64_t cols, float scale,
                               const AttentionPrecision& pr, bool to_bf16, std::uint16_t* bits,
                               std::int64_t ldb) {
  if (!one_pass(pr, to_bf16)) {
    score_gradients(dp, p, delta, i0, rows, cols, scale, pr, to_bf16);
    to_bf16_rows(dp, rows, cols, cols, bits, ldb);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint16_t* br = bits + r * ldb;
    const std::int64_t valid = std::min(i0 + r + 1, cols);  // keys 0..i0+r; zeros past them
    score_gradients_bf16(dp + r * cols, p + r * cols, delta[r], scale, valid, cols, br);
    std::fill(br + cols, br + ldb, std::uint16_t{0});
  }
}

}  // namespace mantissa::kernels::attention_detail
