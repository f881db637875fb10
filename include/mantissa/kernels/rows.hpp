#pragma once
// Row-wise kernels on float32 buffers of `rows` x `cols`: layer norm, softmax, log-softmax,
// cross-entropy. Statistics and reductions in fp32 (double in the _ref twins).
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

// y = (x - mean) * rstd * gamma + beta per row; saves mean and rstd (one per row).
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, std::int64_t rows, std::int64_t cols, float eps);
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, xhat = (x - mean) * rstd.
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, std::int64_t rows, std::int64_t cols);
// The parameters' gradients from one row (or a segment of `width` columns of it):
// dgamma[c] += dy[c] * xhat[c], dbeta[c] += dy[c]. Called row after row, in order, these
// are the sums over the rows; split by columns, each thread owns its columns' sums and the
// result does not depend on the split.
void layer_norm_param_gradients(const float* x, const float* dy, float mean, float rstd,
                                float* dgamma, float* dbeta, std::int64_t width);
// The same from 16-bit stored values, bfloat16, float16 or cbfloat16 bits (each widened
// exactly in the loop, infinities and NaNs as the codec decodes them): the same floats as
// layer_norm_param_gradients on the rows decoded, without decoding them first. Another
// format: mantissa::Error.
void layer_norm_param_gradients_16(const std::uint16_t* x, const std::uint16_t* dy,
                                   numerics::Format format, float mean, float rstd, float* dgamma,
                                   float* dbeta, std::int64_t width);
void layer_norm_forward_ref(const float* x, const float* gamma, const float* beta, float* y,
                            std::int64_t rows, std::int64_t cols, float eps);

void softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows,
                      std::int64_t cols);
void log_softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void log_softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows,
                          std::int64_t cols);
void softmax_forward_ref(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void log_softmax_forward_ref(const float* x, float* y, std::int64_t rows, std::int64_t cols);

// Per-row loss_r = logsumexp(x_r) - x_r[target_r] (0 where target_r == ignore_index);
// writes lse_r. Returns the number of rows not ignored.
std::int64_t cross_entropy_forward(const float* logits, const std::int32_t* targets,
                                   std::int64_t rows, std::int64_t cols, std::int32_t ignore_index,
                                   float* loss, float* lse);
// dlogits_r = scale * (softmax(x_r) - onehot(target_r)); zero rows where ignored.
void cross_entropy_backward(const float* logits, const float* lse, const std::int32_t* targets,
                            std::int64_t rows, std::int64_t cols, std::int32_t ignore_index,
                            float scale, float* dlogits);

}  // namespace mantissa::kernels
