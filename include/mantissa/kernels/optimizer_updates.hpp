#pragma once
// Optimizer update kernels on float32 arrays, one pass over memory each (vectorized by the
// compiler, split across threads). Hyperparameters follow PyTorch's names and semantics.
#include <cstdint>

namespace mantissa::kernels {

struct AdamArgs {
  float lr, beta1, beta2, eps, weight_decay;
  bool decoupled;        // AdamW: p *= 1 - lr*wd before the update; else L2 (g += wd p)
  bool bias_correction;  // divide by 1 - beta^t
  std::int64_t step;     // t, from 1
};
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
void adam_update(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamArgs& a);
// The naive twin, in double per element.
void adam_update_ref(float* p, const float* g, float* m, float* v, std::int64_t n,
                     const AdamArgs& a);

struct SgdArgs {
  float lr, momentum, dampening, weight_decay;
  bool nesterov, first_step;  // the first step initializes the momentum buffer with d_p
};
void sgd_update(float* p, const float* g, float* buf, std::int64_t n, const SgdArgs& a);

}  // namespace mantissa::kernels
