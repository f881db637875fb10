// Lamb, Lion, Adafactor, NAdam and Muon against values derived by hand from their published
// update rules (tolerance 1e-6 relative: float32 state and parameters).
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
  // The vendor's Lamb (no bias correction): g = [1, -1] gives m = 0.1 g, v = 0.001 g^2 and
  // u = m / (sqrt(v) + 1e-6) = u0 [1, -1], u0 = 0.1 / (sqrt(0.001) + 1e-6). p = [3, 4] has
  // norm 5, so trust * u = 5 / (sqrt(2) u0) u = 5 / sqrt(2) [1, -1].
  OptimizerRun r(Lamb{}, {3.0f, 4.0f}, {2}, 0.1);
  const double d = 0.1 * 5.0 / std::sqrt(2.0);
  expect_values(r.step({1.0f, -1.0f}), {3.0 - d, 4.0 + d});
}

TEST(HandDerived, LambTrustRatioClampAndAdamMode) {
  const double u0 = 0.1 / (std::sqrt(0.001) + 1e-6);
  // p = [30, 40] has norm 50, clamped to 10: trust * u = 10 / sqrt(2) [1, -1].
  OptimizerRun clamped(Lamb{}, {30.0f, 40.0f}, {2}, 0.1);
  const double d = 0.1 * 10.0 / std::sqrt(2.0);
  expect_values(clamped.step({1.0f, -1.0f}), {30.0 - d, 40.0 + d});
  // adam: trust ratio 1, so p -= lr u.
  Lamb adam;
  adam.adam = true;
  OptimizerRun plain(adam, {30.0f, 40.0f}, {2}, 0.1);
  expect_values(plain.step({1.0f, -1.0f}), {30.0 - 0.1 * u0, 40.0 + 0.1 * u0});
  // bias_correction: m_hat = g, v_hat = g^2, u = g / (|g| + 1e-6); trust 10 / (sqrt(2) |u|).
  Lamb corrected;
  corrected.bias_correction = true;
  OptimizerRun c(corrected, {30.0f, 40.0f}, {2}, 0.1);
  expect_values(c.step({1.0f, -1.0f}), {30.0 - d, 40.0 + d});
}

TEST(HandDerived, AdafactorUnfactored) {
  // p = [1, 2]: RMS(p) = sqrt(2.5) scales lr 0.01. Step 1: beta2t = 1 - 1^-0.8 = 0, so
  // v = g^2 (+1e-30) and u = g / |g| = [1, -1], RMS 1: no clipping.
  OptimizerRun r(Adafactor{}, {1.0f, 2.0f}, {2}, 0.01);
  const double lr = 0.01 * std::sqrt(2.5);
  expect_values(r.step({0.5f, -1.0f}), {1.0 - lr, 2.0 + lr});
}

TEST(HandDerived, AdafactorRelativeStep) {
  // relative_step: the step size is min(1e-2, 1/sqrt(t)) (warmup_init: min(1e-6 t,
  // 1/sqrt(t))) times RMS(p) = sqrt(2.5); the schedule's 0.5 is not used. u = [1, -1].
  Adafactor relative;
  relative.relative_step = true;
  OptimizerRun r(relative, {1.0f, 2.0f}, {2}, 0.5);
  const double step1 = 1e-2 * std::sqrt(2.5);
  expect_values(r.step({0.5f, -1.0f}), {1.0 - step1, 2.0 + step1});
  Adafactor warm = relative;
  warm.warmup_init = true;
  OptimizerRun w(warm, {1.0f, 2.0f}, {2}, 0.5);
  const double lr = 1e-6 * std::sqrt(2.5);
  expect_values(w.step({0.5f, -1.0f}), {1.0 - lr, 2.0 + lr});
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

// Muon's Newton-Schulz step on a matrix X with singular values s maps each s to
// a s + b s^3 + c s^5 and keeps the singular vectors.
double newton_schulz(double s, int steps) {
  for (int i = 0; i < steps; ++i) s = 3.4445 * s - 4.7750 * s * s * s + 2.0315 * std::pow(s, 5);
  return s;
}

TEST(HandDerived, MuonOrthogonalizesMatrices) {
  // Step 1 (lr 0.02, wd 0.01, momentum 0.95, nesterov): buf = 0.05 g, u = 0.05 g + 0.95 buf
  // = 0.0975 g, normalized to g / ||g||. g = diag(3, 4): singular values 0.6, 0.8 on the
  // diagonal; square, so the scale sqrt(max(1, 2/2)) is 1.
  OptimizerRun square(Muon{}, {1, 0, 0, 1}, {2, 2}, 0.02);
  const double decay = 1.0 - 0.02 * 0.01;
  expect_values(square.step({3, 0, 0, 4}), {decay - 0.02 * newton_schulz(0.6, 5), 0.0, 0.0,
                                            decay - 0.02 * newton_schulz(0.8, 5)});
  // A row [3, 4]: one singular value, 1 after normalization, direction [0.6, 0.8].
  OptimizerRun row(Muon{}, {0, 0}, {1, 2}, 0.02);
  const double f = newton_schulz(1.0, 5);
  expect_values(row.step({3, 4}), {-0.02 * 0.6 * f, -0.02 * 0.8 * f});
  // The column [3, 4]^T: the same through the transpose, scaled by sqrt(max(1, 2/1)).
  OptimizerRun column(Muon{}, {0, 0}, {2, 1}, 0.02);
  const double tall = 0.02 * std::sqrt(2.0) * f;
  expect_values(column.step({3, 4}), {-tall * 0.6, -tall * 0.8});
  // A vector takes the momentum update as it is: p = 2 decay - lr 0.0975 g.
  OptimizerRun vec(Muon{}, {2, 2}, {2}, 0.02);
  expect_values(vec.step({1, -2}), {2 * decay - 0.02 * 0.0975, 2 * decay + 0.02 * 0.195});
  // Without nesterov the update is the buffer, 0.05 g: for the vector, p = 2 decay - lr 0.05 g.
  Muon plain;
  plain.nesterov = false;
  OptimizerRun v2(plain, {2, 2}, {2}, 0.02);
  expect_values(v2.step({1, -2}), {2 * decay - 0.02 * 0.05, 2 * decay + 0.02 * 0.1});
}

}  // namespace
}  // namespace mantissa::optim
