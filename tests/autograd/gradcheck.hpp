#pragma once
// Central finite differences, accumulated in double, against backward(), for ops on small
// random shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mantissa/autograd/ops.hpp"

namespace mantissa::testing {

using autograd::Variable;
using tensor::Shape;
using tensor::Tensor;

inline Tensor random_tensor(const Shape& s, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (float& x : v) x = d(rng);
  return Tensor::from_vector(v, s);
}

using OpFn = std::function<Variable(const std::vector<Variable>&)>;

// L = sum(f(inputs) * R) for a fixed random R; checks dL/dinput against
// (L(x + h) - L(x - h)) / 2h in double for every element of every input in `check`.
inline void gradcheck(const std::string& label, const OpFn& f, const std::vector<Tensor>& inputs,
                      std::vector<bool> check = {}, double h = 1e-2, double atol = 2e-3,
                      double rtol = 1e-2) {
  if (check.empty()) check.assign(inputs.size(), true);
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  const Variable y = f(vars);
  const Tensor r = random_tensor(y.shape(), 99);
  const std::vector<float> rv = r.to_vector();
  autograd::backward(autograd::sum(autograd::mul(y, Variable(r))));

  auto loss = [&](const std::vector<Tensor>& xs) {
    autograd::NoGradGuard no_grad;
    std::vector<Variable> v;
    for (const Tensor& t : xs) v.emplace_back(t);
    const std::vector<float> out = f(v).value().to_vector();
    double acc = 0;
    for (std::size_t i = 0; i < out.size(); ++i) acc += static_cast<double>(out[i]) * rv[i];
    return acc;
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!check[i]) continue;
    ASSERT_TRUE(vars[i].grad().defined()) << label << ": no gradient for input " << i;
    const std::vector<float> analytic = vars[i].grad().to_vector();
    for (std::int64_t j = 0; j < inputs[i].numel(); ++j) {
      std::vector<Tensor> plus, minus;
      for (const Tensor& t : inputs) {
        plus.push_back(t.clone());
        minus.push_back(t.clone());
      }
      plus[i].f32()[j] += static_cast<float>(h);
      minus[i].f32()[j] -= static_cast<float>(h);
      const double step = static_cast<double>(plus[i].f32()[j]) - minus[i].f32()[j];
      const double fd = (loss(plus) - loss(minus)) / step;
      ASSERT_NEAR(analytic[static_cast<std::size_t>(j)], fd, atol + rtol * std::fabs(fd))
          << label << ": input " << i << " element " << j;
    }
  }
}

}  // namespace mantissa::testing
