// SGD (momentum, dampening, nesterov, weight decay) and ASGD, as PyTorch 1.13.
#include <algorithm>
#include <cmath>

#include "mantissa/kernels/optimizer_updates.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {

std::vector<Definition> sgd_family() {
  Definition sgd{"sgd",
                 {{"momentum", 0.0}, {"dampening", 0.0}, {"weight_decay", 0.0}, {"nesterov", 0.0}},
                 fixed_states({"momentum_buffer"}),
                 [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n,
                    double lr, double wd, std::int64_t step, const Variable&) {
                   const kernels::SgdArgs a{static_cast<float>(lr),
                                            static_cast<float>(h("momentum")),
                                            static_cast<float>(h("dampening")),
                                            static_cast<float>(wd),
                                            h("nesterov") != 0.0,
                                            step == 1};
                   kernels::sgd_update(p, g, s[0].f32(), n, a);
                 },
                 {}};
  Definition asgd{"asgd",
                  {{"lambd", 1e-4}, {"alpha", 0.75}, {"t0", 1e6}, {"weight_decay", 0.0}},
                  fixed_states({"eta", "mu", "ax"}),
                  [](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                     std::int64_t n, double lr, double wd, std::int64_t step, const Variable&) {
                    float& eta = s[0].f32()[0];
                    float& mu = s[1].f32()[0];
                    float* ax = s[2].f32();
                    if (step == 1) {  // PyTorch starts eta at the learning rate and mu at 1
                      eta = static_cast<float>(lr);
                      mu = 1.0f;
                    }
                    const auto lambd = static_cast<float>(h("lambd"));
                    const float decay = 1.0f - lambd * eta, e = eta, m = mu;
                    for (std::int64_t i = 0; i < n; ++i) {
                      const float gi = g[i] + static_cast<float>(wd) * p[i];
                      p[i] = p[i] * decay - e * gi;
                      ax[i] = m != 1.0f ? ax[i] + (p[i] - ax[i]) * m : p[i];
                    }
                    const double t = static_cast<double>(step);
                    eta = static_cast<float>(lr / std::pow(1.0 + h("lambd") * lr * t, h("alpha")));
                    mu = static_cast<float>(1.0 / std::max(1.0, t - h("t0")));
                  },
                  [](const std::string& name, const Variable& param, const auto&) {
                    return name == "ax" ? Tensor::zeros(param.shape())
                                        : Tensor::zeros(tensor::Shape{1});
                  }};
  return {sgd, asgd};
}

}  // namespace mantissa::optim::detail
