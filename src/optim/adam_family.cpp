// Adam, AdamW (with AMSGrad), Adamax, NAdam, RAdam (as PyTorch 1.13) and Lamb (You et al.
// 2019, as the vendor has it).
#include <algorithm>
#include <cmath>

#include "mantissa/kernels/optimizer_updates.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {
namespace {

const std::vector<std::string> kMoments = {"exp_avg", "exp_avg_sq"};

// PyTorch's AMSGrad: the denominator uses the running maximum of the second moment
// (max_exp_avg_sq), in the same float32 steps as the kernel's update.
void amsgrad_update(const kernels::AdamArgs& k, const UpdateArgs& a) {
  const double bc1 = k.bias_correction ? 1.0 - std::pow(static_cast<double>(k.beta1), k.step) : 1.0;
  const double bc2 = k.bias_correction ? 1.0 - std::pow(static_cast<double>(k.beta2), k.step) : 1.0;
  const auto step_size = static_cast<float>(k.lr / bc1);
  const auto sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  const float decay = k.decoupled ? 1.0f - k.lr * k.weight_decay : 1.0f;
  const float l2 = k.decoupled ? 0.0f : k.weight_decay;
  float *m = a.state[0].f32(), *v = a.state[1].f32(), *vmax = a.state[2].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float w = p[i] * decay;
    const float gi = a.g[i] + l2 * p[i];
    m[i] = k.beta1 * m[i] + (1.0f - k.beta1) * gi;
    v[i] = k.beta2 * v[i] + (1.0f - k.beta2) * gi * gi;
    vmax[i] = std::max(vmax[i], v[i]);
    p[i] = w - step_size * m[i] / (std::sqrt(vmax[i]) / sqrt_bc2 + k.eps);
  }
}

template <bool Decoupled>
void adam_like(const AdamSettings<Decoupled>& s, const UpdateArgs& a) {
  const kernels::AdamArgs k{static_cast<float>(a.lr),    static_cast<float>(s.beta1),
                            static_cast<float>(s.beta2), static_cast<float>(s.eps),
                            static_cast<float>(a.wd),    Decoupled,
                            s.bias_correction,           a.step};
  if (s.amsgrad) {
    amsgrad_update(k, a);
  } else {
    kernels::adam_update(a.p, a.g, a.state[0].f32(), a.state[1].f32(), a.n, k);
  }
}

template <bool Decoupled>
std::vector<std::string> adam_state(const AdamSettings<Decoupled>& s) {
  std::vector<std::string> names = kMoments;
  if (s.amsgrad) names.push_back("max_exp_avg_sq");
  return names;
}

}  // namespace

std::vector<std::string> state_names(const Adam& s, const Variable&) {
  return adam_state(s);
}
void update(const Adam& s, const UpdateArgs& a) {
  adam_like(s, a);
}
std::vector<std::string> state_names(const AdamW& s, const Variable&) {
  return adam_state(s);
}
void update(const AdamW& s, const UpdateArgs& a) {
  adam_like(s, a);
}

std::vector<std::string> state_names(const Adamax&, const Variable&) {
  return {"exp_avg", "exp_inf"};
}

void update(const Adamax& s, const UpdateArgs& a) {
  const auto b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2),
             eps = static_cast<float>(s.eps);
  const auto clr = static_cast<float>(a.lr / (1.0 - std::pow(s.beta1, a.step)));
  float *m = a.state[0].f32(), *u = a.state[1].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    u[i] = std::max(b2 * u[i], std::fabs(gi) + eps);
    p[i] -= clr * m[i] / u[i];
  }
}

// NAdam's state: the moments, then mu_product (one value, starting at 1).
std::vector<std::string> state_names(const NAdam&, const Variable&) {
  return {"exp_avg", "exp_avg_sq", "mu_product"};
}

Tensor init_state(const NAdam&, std::size_t index, const Variable& param) {
  return index == 2 ? Tensor::full(tensor::Shape{1}, 1.0f) : Tensor::zeros(param.shape());
}

void update(const NAdam& s, const UpdateArgs& a) {
  const double b1 = s.beta1, b2 = s.beta2, md = s.momentum_decay;
  const double t = static_cast<double>(a.step);
  float& mu_product = a.state[2].f32()[0];
  if (a.step == 1) mu_product = 1.0f;
  const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, t * md));
  const double mu_next = b1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * md));
  mu_product = static_cast<float>(mu_product * mu);  // float32, as PyTorch keeps it
  const float mu_product_next = static_cast<float>(mu_product * mu_next);
  const auto c_grad = static_cast<float>(-a.lr * (1.0 - mu) / (1.0 - mu_product));
  const auto c_avg = static_cast<float>(-a.lr * mu_next / (1.0 - mu_product_next));
  const auto bc2 = static_cast<float>(1.0 - std::pow(b2, t));
  const auto fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2),
             eps = static_cast<float>(s.eps);
  float *m = a.state[0].f32(), *v = a.state[1].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    m[i] = fb1 * m[i] + (1.0f - fb1) * gi;
    v[i] = fb2 * v[i] + (1.0f - fb2) * gi * gi;
    const float denom = std::sqrt(v[i] / bc2) + eps;
    p[i] += c_grad * gi / denom;
    p[i] += c_avg * m[i] / denom;
  }
}

std::vector<std::string> state_names(const RAdam&, const Variable&) {
  return kMoments;
}

void update(const RAdam& s, const UpdateArgs& a) {
  const double b1 = s.beta1, b2 = s.beta2, t = static_cast<double>(a.step);
  const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
  const double rho_t = rho_inf - 2.0 * t * std::pow(b2, t) / bc2;
  const bool rectify = rho_t > 5.0;
  const double rect =
      rectify
          ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
          : 0.0;
  const auto fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2),
             eps = static_cast<float>(s.eps);
  const auto scale_m = static_cast<float>(a.lr / bc1);
  const auto scale_rect = static_cast<float>(a.lr / bc1 * rect);
  const auto sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  float *m = a.state[0].f32(), *v = a.state[1].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float gi = a.g[i] + static_cast<float>(a.wd) * p[i];
    m[i] = fb1 * m[i] + (1.0f - fb1) * gi;
    v[i] = fb2 * v[i] + (1.0f - fb2) * gi * gi;
    if (rectify) {
      p[i] -= scale_rect * m[i] * (sqrt_bc2 / (std::sqrt(v[i]) + eps));
    } else {
      p[i] -= scale_m * m[i];
    }
  }
}

std::vector<std::string> state_names(const Lamb&, const Variable&) {
  return kMoments;
}

// Lamb: the Adam direction plus decoupled weight decay, scaled per tensor by the trust ratio
// min(||p||, 10) / ||update|| (1 when either norm is 0, or with `adam`).
void update(const Lamb& s, const UpdateArgs& a) {
  const double b1 = s.beta1, b2 = s.beta2, eps = s.eps, t = static_cast<double>(a.step);
  const bool bc = s.bias_correction;
  const double bc1 = bc ? 1.0 - std::pow(b1, t) : 1.0, bc2 = bc ? 1.0 - std::pow(b2, t) : 1.0;
  float *m = a.state[0].f32(), *v = a.state[1].f32(), *p = a.p;
  const float* g = a.g;
  std::vector<float> u(static_cast<std::size_t>(a.n));
  double p_norm = 0, u_norm = 0;
  for (std::int64_t i = 0; i < a.n; ++i) {
    m[i] = static_cast<float>(b1 * m[i] + (1.0 - b1) * g[i]);
    v[i] = static_cast<float>(b2 * v[i] + (1.0 - b2) * static_cast<double>(g[i]) * g[i]);
    const double ui = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps) + a.wd * p[i];
    u[static_cast<std::size_t>(i)] = static_cast<float>(ui);
    p_norm += static_cast<double>(p[i]) * p[i];
    u_norm += ui * ui;
  }
  p_norm = std::min(std::sqrt(p_norm), 10.0);
  u_norm = std::sqrt(u_norm);
  const double trust = p_norm > 0 && u_norm > 0 && !s.adam ? p_norm / u_norm : 1.0;
  for (std::int64_t i = 0; i < a.n; ++i) {
    p[i] = static_cast<float>(p[i] - a.lr * trust * u[static_cast<std::size_t>(i)]);
  }
}

}  // namespace mantissa::optim::detail
