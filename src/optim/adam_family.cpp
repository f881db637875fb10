// Adam, AdamW, Adamax, NAdam, RAdam (as PyTorch 1.13) and Lamb (You et al. 2019).
#include <algorithm>
#include <cmath>

#include "mantissa/kernels/optimizer_updates.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {
namespace {

std::vector<HyperSpec> adam_specs(double weight_decay, double eps = 1e-8) {
  return {{"beta1", 0.9},
          {"beta2", 0.999},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"bias_correction", 1.0}};
}

Definition adam_like(const std::string& name, bool decoupled, double default_wd) {
  return {name,
          adam_specs(default_wd),
          fixed_states({"exp_avg", "exp_avg_sq"}),
          [decoupled](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                      std::int64_t n, double lr, double wd, std::int64_t step, const Variable&) {
            const kernels::AdamArgs a{
                static_cast<float>(lr),         static_cast<float>(h("beta1")),
                static_cast<float>(h("beta2")), static_cast<float>(h("eps")),
                static_cast<float>(wd),         decoupled,
                h("bias_correction") != 0.0,    step};
            kernels::adam_update(p, g, s[0].f32(), s[1].f32(), n, a);
          },
          {}};
}

}  // namespace

std::vector<Definition> adam_family() {
  Definition adamax{"adamax",
                    {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.0}},
                    fixed_states({"exp_avg", "exp_inf"}),
                    [](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                       std::int64_t n, double lr, double wd, std::int64_t step, const Variable&) {
                      const auto b1 = static_cast<float>(h("beta1")),
                                 b2 = static_cast<float>(h("beta2")),
                                 eps = static_cast<float>(h("eps"));
                      const auto clr = static_cast<float>(lr / (1.0 - std::pow(h("beta1"), step)));
                      float *m = s[0].f32(), *u = s[1].f32();
                      for (std::int64_t i = 0; i < n; ++i) {
                        const float gi = g[i] + static_cast<float>(wd) * p[i];
                        m[i] = b1 * m[i] + (1.0f - b1) * gi;
                        u[i] = std::max(b2 * u[i], std::fabs(gi) + eps);
                        p[i] -= clr * m[i] / u[i];
                      }
                    },
                    {}};
  Definition nadam{"nadam",
                   {{"beta1", 0.9},
                    {"beta2", 0.999},
                    {"eps", 1e-8},
                    {"weight_decay", 0.0},
                    {"momentum_decay", 4e-3}},
                   fixed_states({"exp_avg", "exp_avg_sq", "mu_product"}),
                   [](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                      std::int64_t n, double lr, double wd, std::int64_t step, const Variable&) {
                     const double b1 = h("beta1"), b2 = h("beta2"), md = h("momentum_decay");
                     const double t = static_cast<double>(step);
                     float& mu_product = s[2].f32()[0];
                     if (step == 1) mu_product = 1.0f;
                     const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, t * md));
                     const double mu_next = b1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * md));
                     mu_product =
                         static_cast<float>(mu_product * mu);  // float32, as PyTorch keeps it
                     const float mu_product_next = static_cast<float>(mu_product * mu_next);
                     const auto c_grad = static_cast<float>(-lr * (1.0 - mu) / (1.0 - mu_product));
                     const auto c_avg = static_cast<float>(-lr * mu_next / (1.0 - mu_product_next));
                     const auto bc2 = static_cast<float>(1.0 - std::pow(b2, t));
                     const auto fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2),
                                eps = static_cast<float>(h("eps"));
                     float *m = s[0].f32(), *v = s[1].f32();
                     for (std::int64_t i = 0; i < n; ++i) {
                       const float gi = g[i] + static_cast<float>(wd) * p[i];
                       m[i] = fb1 * m[i] + (1.0f - fb1) * gi;
                       v[i] = fb2 * v[i] + (1.0f - fb2) * gi * gi;
                       const float denom = std::sqrt(v[i] / bc2) + eps;
                       p[i] += c_grad * gi / denom;
                       p[i] += c_avg * m[i] / denom;
                     }
                   },
                   [](const std::string& name, const Variable& param, const auto&) {
                     return name == "mu_product" ? Tensor::full(tensor::Shape{1}, 1.0f)
                                                 : Tensor::zeros(param.shape());
                   }};
  Definition radam{"radam",
                   {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.0}},
                   fixed_states({"exp_avg", "exp_avg_sq"}),
                   [](const auto& h, float* p, const float* g, std::vector<Tensor>& s,
                      std::int64_t n, double lr, double wd, std::int64_t step, const Variable&) {
                     const double b1 = h("beta1"), b2 = h("beta2"), t = static_cast<double>(step);
                     const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
                     const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
                     const double rho_t = rho_inf - 2.0 * t * std::pow(b2, t) / bc2;
                     const bool rectify = rho_t > 5.0;
                     const double rect = rectify
                                             ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                                         ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                                             : 0.0;
                     const auto fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2),
                                eps = static_cast<float>(h("eps"));
                     const auto scale_m = static_cast<float>(lr / bc1);
                     const auto scale_rect = static_cast<float>(lr / bc1 * rect);
                     const auto sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
                     float *m = s[0].f32(), *v = s[1].f32();
                     for (std::int64_t i = 0; i < n; ++i) {
                       const float gi = g[i] + static_cast<float>(wd) * p[i];
                       m[i] = fb1 * m[i] + (1.0f - fb1) * gi;
                       v[i] = fb2 * v[i] + (1.0f - fb2) * gi * gi;
                       if (rectify) {
                         p[i] -= scale_rect * m[i] * (sqrt_bc2 / (std::sqrt(v[i]) + eps));
                       } else {
                         p[i] -= scale_m * m[i];
                       }
                     }
                   },
                   {}};
  // Lamb: the Adam direction plus decoupled weight decay, scaled per tensor by the trust
  // ratio ||p|| / ||update|| (1 when either norm is 0).
  Definition lamb{
      "lamb",
      adam_specs(0.0, 1e-6),
      fixed_states({"exp_avg", "exp_avg_sq"}),
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double wd, std::int64_t step, const Variable&) {
        const double b1 = h("beta1"), b2 = h("beta2"), eps = h("eps"),
                     t = static_cast<double>(step);
        const bool bc = h("bias_correction") != 0.0;
        const double bc1 = bc ? 1.0 - std::pow(b1, t) : 1.0, bc2 = bc ? 1.0 - std::pow(b2, t) : 1.0;
        float *m = s[0].f32(), *v = s[1].f32();
        std::vector<float> u(static_cast<std::size_t>(n));
        double p_norm = 0, u_norm = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          m[i] = static_cast<float>(b1 * m[i] + (1.0 - b1) * g[i]);
          v[i] = static_cast<float>(b2 * v[i] + (1.0 - b2) * static_cast<double>(g[i]) * g[i]);
          const double ui = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps) + wd * p[i];
          u[static_cast<std::size_t>(i)] = static_cast<float>(ui);
          p_norm += static_cast<double>(p[i]) * p[i];
          u_norm += ui * ui;
        }
        p_norm = std::sqrt(p_norm);
        u_norm = std::sqrt(u_norm);
        const double trust = p_norm > 0 && u_norm > 0 ? p_norm / u_norm : 1.0;
        for (std::int64_t i = 0; i < n; ++i) {
          p[i] = static_cast<float>(p[i] - lr * trust * u[static_cast<std::size_t>(i)]);
        }
      },
      {}};
  return {
      adam_like("adam", false, 0.0), adam_like("adamw", true, 1e-2), adamax, nadam, radam, lamb};
}

}  // namespace mantissa::optim::detail
