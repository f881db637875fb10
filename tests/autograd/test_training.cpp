// Small models trained for 100 steps of plain SGD on synthetic data lower their loss, in
// float32 and under each half policy; and identical steps do not grow the storage pool.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using autograd::Variable;
using numerics::Format;
using tensor::Shape;
using tensor::Tensor;

// zero_grad() leaves the zeros to write until someone reads the gradient or a backward
// arrives (whose first contribution then replaces the stale values): hand-derived values of
// d/dx sum(k x) = k.
TEST(ZeroGrad, ReadsAsZerosAndTheNextBackwardStartsFromThem) {
  Variable x(Tensor::from_vector({1.0f, -2.0f, 3.0f}, Shape{3}), true);
  autograd::backward(ag::sum(ag::scale(x, 2.0f)));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{2.0f, 2.0f, 2.0f}));
  x.zero_grad();
  autograd::backward(ag::sum(ag::scale(x, 3.0f)));  // not 2 + 3
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{3.0f, 3.0f, 3.0f}));
  autograd::backward(ag::sum(ag::scale(x, 0.5f)));  // accumulates: 3 + 0.5
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{3.5f, 3.5f, 3.5f}));
  x.zero_grad();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
  autograd::backward(ag::sum(ag::scale(x, 4.0f)));  // after the zeros were written
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{4.0f, 4.0f, 4.0f}));
  // A bfloat16 leaf (low-precision training state) too.
  Variable y(Tensor::from_vector({1.0f, 2.0f}, Shape{2}).to(Format::bfloat16), true);
  autograd::backward(ag::sum(ag::scale(y, 2.0f)));
  y.zero_grad();
  autograd::backward(ag::sum(ag::scale(y, 0.25f)));
  EXPECT_EQ(y.grad().to_vector(), (std::vector<float>{0.25f, 0.25f}));
}

Variable param(const Shape& s, tensor::Rng& rng, float stddev) {
  Tensor t = Tensor::empty(s);
  rng.fill_normal(t, 0.0f, stddev);
  return Variable(t, true);
}
Variable constant(const Shape& s, float v) {
  return Variable(Tensor::full(s, v), true);
}

void sgd_step(std::vector<Variable>& params, float lr) {
  for (Variable& p : params) {
    float* w = p.mutable_value().f32();
    const float* g = p.grad().f32();
    for (std::int64_t i = 0; i < p.value().numel(); ++i) w[i] -= lr * g[i];
    p.bump_version();
    p.zero_grad();
  }
}

struct Mlp {
  std::vector<Variable> params;
  explicit Mlp(tensor::Rng& rng) {
    params = {param({32, 8}, rng, 0.3f), constant({32}, 0.0f), param({4, 32}, rng, 0.2f),
              constant({4}, 0.0f)};
  }
  Variable loss(const Tensor& x, const std::vector<std::int32_t>& y) const {
    const Variable h = ag::relu(ag::linear(Variable(x), params[0], params[1]));
    return ag::cross_entropy(ag::linear(h, params[2], params[3]), y);
  }
};

// Four Gaussian blobs in 8 dimensions.
void blobs(std::mt19937& rng, Tensor& x, std::vector<std::int32_t>& y) {
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::vector<float> v(static_cast<std::size_t>(x.numel()));
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] = static_cast<std::int32_t>(rng() % 4);
    for (int d = 0; d < 8; ++d) {
      v[i * 8 + d] = noise(rng) + ((d % 4) == y[i] ? 2.0f : 0.0f);
    }
  }
  x = Tensor::from_vector(v, x.shape());
}

class Training : public ::testing::TestWithParam<Format> {};

TEST_P(Training, MlpLowersItsLoss) {
  precision::Autocast cast({GetParam(), 1});
  tensor::Rng rng(1);
  Mlp mlp(rng);
  std::mt19937 data(2);
  Tensor x = Tensor::empty({64, 8});
  std::vector<std::int32_t> y(64);
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    blobs(data, x, y);
    const Variable l = mlp.loss(x, y);
    if (step == 0) first = l.value().item();
    last = l.value().item();
    ag::backward(l);
    sgd_step(mlp.params, 0.2f);
  }
  EXPECT_LT(last, 0.5f * first) << numerics::name(GetParam()) << ": " << first << " -> " << last;
}

// One pre-LN transformer block on next-token prediction of t_{i+1} = (t_i + 3) mod 16.
struct TinyTransformer {
  static constexpr int kVocab = 16, kDim = 32, kHeads = 2, kT = 24;
  std::vector<Variable> params;
  explicit TinyTransformer(tensor::Rng& rng) {
    params = {param({kVocab, kDim}, rng, 0.1f),
              param({kT, kDim}, rng, 0.1f),
              constant({kDim}, 1.0f),
              constant({kDim}, 0.0f),
              param({3 * kDim, kDim}, rng, 0.1f),
              constant({3 * kDim}, 0.0f),
              param({kDim, kDim}, rng, 0.1f),
              constant({kDim}, 0.0f),
              constant({kDim}, 1.0f),
              constant({kDim}, 0.0f),
              param({4 * kDim, kDim}, rng, 0.1f),
              constant({4 * kDim}, 0.0f),
              param({kDim, 4 * kDim}, rng, 0.1f),
              constant({kDim}, 0.0f),
              constant({kDim}, 1.0f),
              constant({kDim}, 0.0f),
              param({kVocab, kDim}, rng, 0.1f)};
  }
  Variable loss(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
                int batch) const {
    const auto& p = params;
    std::vector<std::int32_t> positions;
    for (int b = 0; b < batch; ++b) {
      for (int t = 0; t < kT; ++t) positions.push_back(t);
    }
    Variable x = ag::add(ag::embedding(p[0], ids, Shape{batch, kT}),
                         ag::embedding(p[1], positions, Shape{batch, kT}));
    const Variable qkv = ag::linear(ag::layer_norm(x, p[2], p[3]), p[4], p[5]);
    auto parts = ag::split(qkv, {kDim, kDim, kDim}, -1);
    auto heads = [&](const Variable& v) {
      return ag::transpose(ag::reshape(v, Shape{batch, kT, kHeads, kDim / kHeads}), 1, 2);
    };
    const Variable att = ag::causal_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]));
    const Variable merged = ag::reshape(ag::transpose(att, 1, 2), Shape{batch, kT, kDim});
    x = ag::add(x, ag::linear(merged, p[6], p[7]));
    const Variable h = ag::gelu(ag::linear(ag::layer_norm(x, p[8], p[9]), p[10], p[11]));
    x = ag::add(x, ag::linear(h, p[12], p[13]));
    const Variable logits = ag::linear(ag::layer_norm(x, p[14], p[15]), p[16], Variable());
    return ag::cross_entropy(ag::reshape(logits, Shape{batch * kT, kVocab}), targets);
  }
};

TEST_P(Training, TransformerBlockLowersItsLoss) {
  precision::Autocast cast({GetParam(), 1});
  tensor::Rng rng(3);
  TinyTransformer model(rng);
  std::mt19937 data(4);
  constexpr int kBatch = 8;
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    std::vector<std::int32_t> ids, targets;
    for (int b = 0; b < kBatch; ++b) {
      int t = static_cast<int>(data() % 16);
      for (int i = 0; i < TinyTransformer::kT; ++i) {
        ids.push_back(t);
        t = (t + 3) % 16;
        targets.push_back(t);
      }
    }
    const Variable l = model.loss(ids, targets, kBatch);
    if (step == 0) first = l.value().item();
    last = l.value().item();
    ag::backward(l);
    sgd_step(model.params, 0.5f);
  }
  EXPECT_LT(last, 0.5f * first) << numerics::name(GetParam()) << ": " << first << " -> " << last;
}

INSTANTIATE_TEST_SUITE_P(Policies, Training,
                         ::testing::Values(Format::float32, Format::bfloat16, Format::float16,
                                           Format::cbfloat16),
                         [](const auto& info) { return std::string(numerics::name(info.param)); });

TEST(StoragePool, IdenticalStepsDoNotGrowThePool) {
  precision::Autocast cast({Format::bfloat16, 1});
  tensor::Rng rng(5);
  Mlp mlp(rng);
  std::mt19937 data(6);
  Tensor x = Tensor::empty({64, 8});
  std::vector<std::int32_t> y(64);
  blobs(data, x, y);
  auto step = [&] {
    const Variable l = mlp.loss(x, y);
    ag::backward(l);
    sgd_step(mlp.params, 0.05f);
  };
  for (int i = 0; i < 10; ++i) step();  // warm up: the pool fills its size classes
  const tensor::PoolStats before = tensor::pool_stats();
  for (int i = 0; i < 1000; ++i) step();
  const tensor::PoolStats after = tensor::pool_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(after.system_bytes, before.system_bytes);
  EXPECT_GT(after.reuses, before.reuses + 1000);  // the steps did allocate, from the pool
}

}  // namespace
}  // namespace mantissa::testing
