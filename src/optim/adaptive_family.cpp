// Adagrad, Adadelta, RMSprop and Rprop, as PyTorch 1.13.
#include <algorithm>
#include <cmath>

#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {

std::vector<std::string> state_names(const Adagrad&, const Variable&) {
  return {"sum"};
}

Tensor init_state(const Adagrad& s, std::size_t, const Variable& param) {
  return Tensor::full(param.shape(), static_cast<float>(s.initial_accumulator_value));
}

void update(const Adagrad& s, const UpdateArgs& a) {
  const auto clr = static_cast<float>(a.lr / (1.0 + static_cast<double>(a.step - 1) * s.lr_decay));
  const auto eps = static_cast<float>(s.eps);
  float *sum = a.state[0].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    sum[i] += gi * gi;
    p[i] -= clr * gi / (std::sqrt(sum[i]) + eps);
  }
}

std::vector<std::string> state_names(const Adadelta&, const Variable&) {
  return {"square_avg", "acc_delta"};
}

void update(const Adadelta& s, const UpdateArgs& a) {
  const auto rho = static_cast<float>(s.rho), eps = static_cast<float>(s.eps);
  float *sq = a.state[0].f32(), *acc = a.state[1].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    sq[i] = rho * sq[i] + (1.0f - rho) * gi * gi;
    const float delta = std::sqrt(acc[i] + eps) / std::sqrt(sq[i] + eps) * gi;
    acc[i] = rho * acc[i] + (1.0f - rho) * delta * delta;
    p[i] -= static_cast<float>(a.lr) * delta;
  }
}

std::vector<std::string> state_names(const RmsProp&, const Variable&) {
  return {"square_avg", "momentum_buffer", "grad_avg"};
}

void update(const RmsProp& s, const UpdateArgs& a) {
  const auto alpha = static_cast<float>(s.alpha), eps = static_cast<float>(s.eps),
             mom = static_cast<float>(s.momentum);
  float *sq = a.state[0].f32(), *buf = a.state[1].f32(), *ga = a.state[2].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    sq[i] = alpha * sq[i] + (1.0f - alpha) * gi * gi;
    float avg;
    if (s.centered) {
      ga[i] = alpha * ga[i] + (1.0f - alpha) * gi;
      avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
    } else {
      avg = std::sqrt(sq[i]) + eps;
    }
    if (mom > 0.0f) {
      buf[i] = mom * buf[i] + gi / avg;
      p[i] -= static_cast<float>(a.lr) * buf[i];
    } else {
      p[i] -= static_cast<float>(a.lr) * gi / avg;
    }
  }
}

std::vector<std::string> state_names(const Rprop&, const Variable&) {
  return {"prev", "step_size"};
}

// Rprop: per-element step sizes start at the learning rate of the first step and then follow
// the signs only (the schedule does not act after step 1, as in PyTorch).
void update(const Rprop& s, const UpdateArgs& a) {
  const auto em = static_cast<float>(s.etaminus), ep = static_cast<float>(s.etaplus),
             lo = static_cast<float>(s.step_size_min), hi = static_cast<float>(s.step_size_max);
  float *prev = a.state[0].f32(), *size = a.state[1].f32(), *p = a.p;
  if (a.step == 1) std::fill(size, size + a.n, static_cast<float>(a.lr));
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float prod = a.g[i] * prev[i];
    const float factor = prod > 0 ? ep : (prod < 0 ? em : 1.0f);
    size[i] = std::clamp(size[i] * factor, lo, hi);
    const float gi = prod < 0 ? 0.0f : a.g[i];
    p[i] -= (gi > 0 ? 1.0f : (gi < 0 ? -1.0f : 0.0f)) * size[i];
    prev[i] = gi;
  }
}

}  // namespace mantissa::optim::detail
