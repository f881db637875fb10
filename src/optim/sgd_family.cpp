// SGD (momentum, dampening, nesterov, weight decay) and ASGD, as PyTorch 1.13.
#include <algorithm>
#include <cmath>

#include "mantissa/kernels/optimizer_updates.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {

std::vector<std::string> state_names(const Sgd&, const Variable&) {
  return {"momentum_buffer"};
}

void update(const Sgd& s, const UpdateArgs& a) {
  const kernels::SgdArgs k{static_cast<float>(a.lr),
                           static_cast<float>(s.momentum),
                           static_cast<float>(s.dampening),
                           static_cast<float>(a.wd),
                           s.nesterov,
                           a.step == 1};
  kernels::sgd_update(a.p, a.g, a.state[0].f32(), a.n, k);
}

// ASGD's state: eta and mu (one value each), then ax (the average).
std::vector<std::string> state_names(const Asgd&, const Variable&) {
  return {"eta", "mu", "ax"};
}

Tensor init_state(const Asgd&, std::size_t index, const Variable& param) {
  return index == 2 ? Tensor::zeros(param.shape()) : Tensor::zeros(tensor::Shape{1});
}

void update(const Asgd& s, const UpdateArgs& a) {
  float& eta = a.state[0].f32()[0];
  float& mu = a.state[1].f32()[0];
  float* ax = a.state[2].f32();
  float* p = a.p;
  if (a.step == 1) {  // PyTorch starts eta at the learning rate and mu at 1
    eta = static_cast<float>(a.lr);
    mu = 1.0f;
  }
  const auto lambd = static_cast<float>(s.lambd);
  const float decay = 1.0f - lambd * eta, e = eta, m = mu;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    p[i] = p[i] * decay - e * gi;
    ax[i] = m != 1.0f ? ax[i] + (p[i] - ax[i]) * m : p[i];
  }
  const double t = static_cast<double>(a.step);
  eta = static_cast<float>(a.lr / std::pow(1.0 + s.lambd * a.lr * t, s.alpha));
  mu = static_cast<float>(1.0 / std::max(1.0, t - s.t0));
}

}  // namespace mantissa::optim::detail
