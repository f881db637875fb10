// Adagrad, Adadelta, RMSprop and Rprop, as PyTorch 1.13.
#include <algorithm>
#include <cmath>

#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {

std::vector<Definition> adaptive_family() {
  Definition adagrad{
      "adagrad",
      {{"lr_decay", 0.0},
       {"weight_decay", 0.0},
       {"initial_accumulator_value", 0.0},
       {"eps", 1e-10}},
      fixed_states({"sum"}),
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double wd, std::int64_t step, const Variable&) {
        const auto clr =
            static_cast<float>(lr / (1.0 + static_cast<double>(step - 1) * h("lr_decay")));
        const auto eps = static_cast<float>(h("eps"));
        float* sum = s[0].f32();
        for (std::int64_t i = 0; i < n; ++i) {
          const float gi = g[i] + static_cast<float>(wd) * p[i];
          sum[i] += gi * gi;
          p[i] -= clr * gi / (std::sqrt(sum[i]) + eps);
        }
      },
      [](const std::string&, const Variable& param, const auto& h) {
        return Tensor::full(param.shape(), static_cast<float>(h("initial_accumulator_value")));
      }};
  Definition adadelta{"adadelta",
                      {{"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 0.0}},
                      fixed_states({"square_avg", "acc_delta"}),
                      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                         std::int64_t n, double lr, double wd, std::int64_t, const Variable&) {
                        const auto rho = static_cast<float>(h("rho")),
                                   eps = static_cast<float>(h("eps"));
                        float *sq = s[0].f32(), *acc = s[1].f32();
                        for (std::int64_t i = 0; i < n; ++i) {
                          const float gi = g[i] + static_cast<float>(wd) * p[i];
                          sq[i] = rho * sq[i] + (1.0f - rho) * gi * gi;
                          const float delta = std::sqrt(acc[i] + eps) / std::sqrt(sq[i] + eps) * gi;
                          acc[i] = rho * acc[i] + (1.0f - rho) * delta * delta;
                          p[i] -= static_cast<float>(lr) * delta;
                        }
                      },
                      {}};
  Definition rmsprop{
      "rmsprop",
      {{"alpha", 0.99}, {"eps", 1e-8}, {"weight_decay", 0.0}, {"momentum", 0.0}, {"centered", 0.0}},
      fixed_states({"square_avg", "momentum_buffer", "grad_avg"}),
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double wd, std::int64_t, const Variable&) {
        const auto alpha = static_cast<float>(h("alpha")), eps = static_cast<float>(h("eps")),
                   mom = static_cast<float>(h("momentum"));
        const bool centered = h("centered") != 0.0;
        float *sq = s[0].f32(), *buf = s[1].f32(), *ga = s[2].f32();
        for (std::int64_t i = 0; i < n; ++i) {
          const float gi = g[i] + static_cast<float>(wd) * p[i];
          sq[i] = alpha * sq[i] + (1.0f - alpha) * gi * gi;
          float avg;
          if (centered) {
            ga[i] = alpha * ga[i] + (1.0f - alpha) * gi;
            avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
          } else {
            avg = std::sqrt(sq[i]) + eps;
          }
          if (mom > 0.0f) {
            buf[i] = mom * buf[i] + gi / avg;
            p[i] -= static_cast<float>(lr) * buf[i];
          } else {
            p[i] -= static_cast<float>(lr) * gi / avg;
          }
        }
      },
      {}};
  // Rprop: per-element step sizes start at the learning rate of the first step and then
  // follow the signs only (the schedule does not act after step 1, as in PyTorch).
  Definition rprop{
      "rprop",
      {{"etaminus", 0.5}, {"etaplus", 1.2}, {"step_size_min", 1e-6}, {"step_size_max", 50.0}},
      fixed_states({"prev", "step_size"}),
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double, std::int64_t step, const Variable&) {
        const auto em = static_cast<float>(h("etaminus")), ep = static_cast<float>(h("etaplus")),
                   lo = static_cast<float>(h("step_size_min")),
                   hi = static_cast<float>(h("step_size_max"));
        float *prev = s[0].f32(), *size = s[1].f32();
        if (step == 1) std::fill(size, size + n, static_cast<float>(lr));
        for (std::int64_t i = 0; i < n; ++i) {
          const float prod = g[i] * prev[i];
          const float factor = prod > 0 ? ep : (prod < 0 ? em : 1.0f);
          size[i] = std::clamp(size[i] * factor, lo, hi);
          const float gi = prod < 0 ? 0.0f : g[i];
          p[i] -= (gi > 0 ? 1.0f : (gi < 0 ? -1.0f : 0.0f)) * size[i];
          prev[i] = gi;
        }
      },
      {}};
  return {adagrad, adadelta, rmsprop, rprop};
}

}  // namespace mantissa::optim::detail
