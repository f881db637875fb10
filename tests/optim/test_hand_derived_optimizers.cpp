// Lamb, Lion, Adafactor and NAdam against values derived by hand from their published update
// rules (tolerance 1e-6 relative: float32 state and parameters).
#include <gtest/gtest.h>

#include <cmath>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim {
namespace {

struct OptimizerRun {
  std::vector<Variable> params;
  std::unique_ptr<Optimizer> opt;
  OptimizerRun(const OptimizerSettings& settings, std::vector<float> init, tensor::Shape shape,
               double lr) {
    params = {Variable(tensor::Tensor::from_vector(init, shape), true)};
    ParamGroup g;
    g.params = params;
    g.learning_rate = constant(lr);
    opt = make_optimizer(settings, {g});
  }
  std::vector<float> step(std::vector<float> grad) {
    params[0].mutable_grad() = tensor::Tensor::from_vector(grad, params[0].shape());
    opt->step();
    return params[0].value().to_vector();
  }
};

void expect_values(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

TEST(HandDerived, Lion) {
  // lr 0.1, wd 0.1, betas (0.9, 0.99). Step 1: c = 0.1 * 0.5 > 0, p = 1 * 0.99 - 0.1 = 0.89,
  // m = 0.01 * 0.5 = 0.005. Step 2 (g = -2): c = 0.0045 - 0.2 < 0, p = 0.89 * 0.99 + 0.1.
  Lion lion;
  lion.weight_decay = 0.1;
  OptimizerRun r(lion, {1.0f}, {1}, 0.1);
  expect_values(r.step({0.5f}), {0.89});
  expect_values(r.step({-2.0f}), {0.89 * 0.99 + 0.1});
}

TEST(HandDerived, Lamb) {
  // p = [3, 4] (norm 5), g = [1, -1]: with bias correction m_hat = g, v_hat = g^2, so the
  // update u = g / (|g| + 1e-6) has norm sqrt(2) |u_0|, and trust * u = 5 / sqrt(2) [1, -1].
  OptimizerRun r(Lamb{}, {3.0f, 4.0f}, {2}, 0.1);
  const double d = 0.1 * 5.0 / std::sqrt(2.0);
  expect_values(r.step({1.0f, -1.0f}), {3.0 - d, 4.0 + d});
}

TEST(HandDerived, AdafactorUnfactored) {
  // p = [1, 2]: RMS(p) = sqrt(2.5) scales lr 0.01. Step 1: beta2t = 1 - 1^-0.8 = 0, so
  // v = g^2 (+1e-30) and u = g / |g| = [1, -1], RMS 1: no clipping.
  OptimizerRun r(Adafactor{}, {1.0f, 2.0f}, {2}, 0.01);
  const double lr = 0.01 * std::sqrt(2.5);
  expect_values(r.step({0.5f, -1.0f}), {1.0 - lr, 2.0 + lr});
}

TEST(HandDerived, AdafactorFactored) {
  // g = [[1, 2], [3, 4]]: row means of g^2 [2.5, 12.5] (their mean 7.5), column means [5, 10];
  // u_rc = g_rc / sqrt(row_r / 7.5) / sqrt(col_c); RMS(u) = sqrt(0.96) < 1: no clipping.
  // p = [[1, 1], [1, 1]] so RMS(p) = 1 and the step size is lr = 0.01.
  OptimizerRun r(Adafactor{}, {1, 1, 1, 1}, {2, 2}, 0.01);
  const double row[2] = {2.5, 12.5}, col[2] = {5.0, 10.0}, g[4] = {1, 2, 3, 4};
  std::vector<double> want(4);
  for (int i = 0; i < 4; ++i) {
    want[i] = 1.0 - 0.01 * g[i] / std::sqrt(row[i / 2] / 7.5) / std::sqrt(col[i % 2]);
  }
  expect_values(r.step({1, 2, 3, 4}), want);
}

TEST(HandDerived, NAdamPublishedRule) {
  // Dozat's NAdam with PyTorch's momentum schedule mu_t = b1 (1 - 0.5 * 0.96^(t * 0.004)):
  // p -= lr (1 - mu_t) / (1 - prod_{i<=t} mu_i) g / denom
  //    + lr mu_{t+1} / (1 - prod_{i<=t+1} mu_i) m / denom, denom = sqrt(v / (1 - b2^t)) + eps.
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8, lr = 0.02;
  auto mu = [&](int t) { return b1 * (1.0 - 0.5 * std::pow(0.96, t * 0.004)); };
  OptimizerRun r(NAdam{}, {1.0f}, {1}, lr);
  double p = 1.0, m = 0, v = 0, prod = 1;
  for (int t = 1; t <= 3; ++t) {
    const double g = t == 2 ? -1.5 : 0.5;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    prod *= mu(t);
    const double denom = std::sqrt(v / (1 - std::pow(b2, t))) + eps;
    p -= lr * (1 - mu(t)) / (1 - prod) * g / denom +
         lr * mu(t + 1) / (1 - prod * mu(t + 1)) * m / denom;
    expect_values(r.step({static_cast<float>(g)}), {p});
  }
}

}  // namespace
}  // namespace mantissa::optim
