#include "mantissa/kernels/optimizer_updates.hpp"

// One thread each: the optimizer runs them over ranges of a parameter on all threads
// (Optimizer::update_in_ranges), each range while it is in cache.

#include <cmath>

namespace mantissa::kernels {

void adam_update(float* __restrict p, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::int64_t n, const AdamArgs& a) {
  const double bc1 = a.bias_correction ? 1.0 - std::pow(static_cast<double>(a.beta1), a.step) : 1.0;
  const double bc2 = a.bias_correction ? 1.0 - std::pow(static_cast<double>(a.beta2), a.step) : 1.0;
  const float step_size = static_cast<float>(a.lr / bc1);
  const auto sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  const float b1 = a.beta1, b2 = a.beta2, eps = a.eps;
  const float decay = a.decoupled ? 1.0f - a.lr * a.weight_decay : 1.0f;
  const float l2 = a.decoupled ? 0.0f : a.weight_decay;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float w = p[i] * decay;
    const float gi = g[i] + l2 * p[i];
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - step_size * mi / (std::sqrt(vi) / sqrt_bc2 + eps);
  }
}

void adam_update_ref(float* p, const float* g, float* m, float* v, std::int64_t n,
                     const AdamArgs& a) {
  const double bc1 = a.bias_correction ? 1.0 - std::pow(static_cast<double>(a.beta1), a.step) : 1.0;
  const double bc2 = a.bias_correction ? 1.0 - std::pow(static_cast<double>(a.beta2), a.step) : 1.0;
  for (std::int64_t i = 0; i < n; ++i) {
    double w = p[i];
    double gi = g[i];
    if (a.decoupled) {
      w *= 1.0 - static_cast<double>(a.lr) * a.weight_decay;
    } else {
      gi += static_cast<double>(a.weight_decay) * p[i];
    }
    const double mi = a.beta1 * static_cast<double>(m[i]) + (1.0 - a.beta1) * gi;
    const double vi = a.beta2 * static_cast<double>(v[i]) + (1.0 - a.beta2) * gi * gi;
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    p[i] = static_cast<float>(w - a.lr / bc1 * mi / (std::sqrt(vi) / std::sqrt(bc2) + a.eps));
  }
}

void sgd_update(float* __restrict p, const float* __restrict g, float* __restrict buf,
                std::int64_t n, const SgdArgs& a) {
  const float mom = a.momentum, damp = 1.0f - a.dampening, wd = a.weight_decay, lr = a.lr;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    float d = g[i] + wd * p[i];
    if (mom != 0.0f) {
      const float b = a.first_step ? d : mom * buf[i] + damp * d;
      buf[i] = b;
      d = a.nesterov ? d + mom * b : b;
    }
    p[i] -= lr * d;
  }
}

}  // namespace mantissa::kernels
