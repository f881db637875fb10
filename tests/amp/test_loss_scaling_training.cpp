// Under a float16 policy, a model whose activation gradients underflow without loss
// scaling (the test measures the fraction that float16 flushes to zero) trains to a clearly
// lower loss with dynamic scaling; under cbfloat16 with dynamic scaling it trains too.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using autograd::Variable;
using tensor::Tensor;

// The loss is the cross-entropy times 2^-22, as when a loss is normalized by a large token
// count: activation gradients fall below float16's smallest subnormal (2^-24).
constexpr float kLossWeight = 1.0f / 4194304.0f;  // 2^-22

struct Model {
  std::vector<Variable> params;
  explicit Model(std::uint64_t seed) {
    tensor::Rng rng(seed);
    Tensor w1 = Tensor::empty({32, 8}), w2 = Tensor::empty({4, 32});
    rng.fill_normal(w1, 0.0f, 0.3f);
    rng.fill_normal(w2, 0.0f, 0.2f);
    params = {Variable(w1, true), Variable(Tensor::zeros({32}), true), Variable(w2, true),
              Variable(Tensor::zeros({4}), true)};
  }
  Variable hidden(const Tensor& x) const {
    return ag::relu(ag::linear(Variable(x), params[0], params[1]));
  }
  Variable loss_from_hidden(const Variable& h, const std::vector<std::int32_t>& y) const {
    return ag::scale(ag::cross_entropy(ag::linear(h, params[2], params[3]), y), kLossWeight);
  }
};

void batch(std::mt19937& rng, Tensor& x, std::vector<std::int32_t>& y) {
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::vector<float> v(64 * 8);
  y.resize(64);
  for (std::size_t i = 0; i < 64; ++i) {
    y[i] = static_cast<std::int32_t>(rng() % 4);
    for (int d = 0; d < 8; ++d) v[i * 8 + d] = noise(rng) + ((d % 4) == y[i] ? 2.0f : 0.0f);
  }
  x = Tensor::from_vector(v, {64, 8});
}

// Fraction of the logits' gradient elements (an activation gradient) that float16 rounds
// to zero (magnitude at most 2^-25, half its smallest subnormal), with the loss scaled by
// `scale`. The logits are made a leaf so their gradient arrives unrounded.
double flushed_fraction(const Model& m, double scale) {
  std::mt19937 data(1);
  Tensor x;
  std::vector<std::int32_t> y;
  batch(data, x, y);
  const Variable logits_value = ag::linear(m.hidden(x), m.params[2], m.params[3]);
  Variable logits(logits_value.value(), true);
  ag::backward(
      ag::scale(ag::scale(ag::cross_entropy(logits, y), kLossWeight), static_cast<float>(scale)));
  std::int64_t flushed = 0, total = 0;
  for (float g : logits.grad().to_vector()) {
    ++total;
    flushed += std::fabs(g) <= std::ldexp(1.0f, -25) ? 1 : 0;
  }
  return static_cast<double>(flushed) / static_cast<double>(total);
}

struct Losses {
  double first, last;  // mean cross-entropy of the first and last 20 steps
};

// Trains 150 SGD steps (learning rate compensating the loss weight).
Losses train(const amp::MixedPrecision& mp) {
  precision::Autocast cast(mp.policy());
  Model m(7);
  optim::ParamGroup g;
  g.params = m.params;
  g.learning_rate = optim::constant(0.2 / kLossWeight);
  auto opt = optim::make_optimizer(optim::Sgd{}, {g});
  auto scaler = mp.make_scaler([](const std::string&) {});
  std::mt19937 data(3);
  Losses l{0, 0};
  for (int step = 0; step < 150; ++step) {
    Tensor x;
    std::vector<std::int32_t> y;
    batch(data, x, y);
    const Variable loss = m.loss_from_hidden(m.hidden(x), y);
    const double ce = loss.value().item() / kLossWeight / 20.0;
    if (step < 20) l.first += ce;
    if (step >= 130) l.last += ce;
    amp::optimizer_step(loss, *opt, scaler.get());
  }
  return l;
}

TEST(LossScalingTraining, Float16UnderflowIsFixedByDynamicScaling) {
  const Model probe(7);
  {
    precision::Autocast cast({numerics::Format::float16, 1});
    const double unscaled = flushed_fraction(probe, 1.0);
    const double scaled = flushed_fraction(probe, 32768.0);
    EXPECT_GT(unscaled, 0.9) << "the setup must underflow without scaling";
    EXPECT_LT(scaled, 0.01) << "2^15 lifts the gradients into float16's range";
  }
  amp::MixedPrecision none;
  none.fp16_type = numerics::Format::float16;
  amp::MixedPrecision dls = none;
  dls.loss_scaling = amp::DynamicLossScaling{};
  const Losses without = train(none), with = train(dls);
  EXPECT_NEAR(without.last, without.first, 0.05 * without.first)
      << "without scaling the flushed gradients stall training";
  EXPECT_LT(with.last, 0.5 * without.last)
      << "dynamic scaling: " << with.last << ", none: " << without.last;
}

TEST(LossScalingTraining, CBFloat16WithDynamicScalingTrains) {
  amp::MixedPrecision cb;
  cb.fp16_type = numerics::Format::cbfloat16;
  cb.loss_scaling = amp::DynamicLossScaling{};
  cb.max_gradient_norm = 1.0 / kLossWeight;
  const Losses l = train(cb);
  EXPECT_LT(l.last, 0.5 * l.first);
}

}  // namespace
}  // namespace mantissa::testing
