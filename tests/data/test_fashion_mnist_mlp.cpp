// The MLP trained one epoch on Fashion-MNIST reaches >= 0.85 test accuracy, in float32 and
// under the bfloat16 policy.
#include <gtest/gtest.h>

#include <cstdio>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/data/loaders.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::data {
namespace {

double one_epoch_accuracy(numerics::Format half) {
  static const ImageDataset train = load_fashion_mnist(ImageSplit::train);
  static const ImageDataset test = load_fashion_mnist(ImageSplit::test);
  precision::Autocast cast({half, 1});
  nn::MlpConfig c;
  c.hidden_sizes = {256};
  nn::Mlp mlp(c, 1);
  optim::ParamGroup g;
  g.params = mlp.parameters();
  ImageLoader loader(train, 128, true, 1, true);
  g.learning_rate = optim::cosine_decay(2e-3, 1e-4, loader.batches_per_epoch());
  auto opt = optim::make_optimizer(optim::AdamW{}, {g});
  for (std::int64_t s = 0; s < loader.batches_per_epoch(); ++s) {
    const ImageBatch b = loader.next();
    amp::optimizer_step(autograd::cross_entropy(mlp.logits(autograd::Variable(b.x)), b.y), *opt,
                        nullptr);
  }
  autograd::NoGradGuard no_grad;
  mlp.eval();
  ImageLoader eval(test, 1000, false, 0, false);
  std::int64_t correct = 0;
  for (std::int64_t s = 0; s < eval.batches_per_epoch(); ++s) {
    const ImageBatch b = eval.next();
    const std::vector<float> logits = mlp.logits(autograd::Variable(b.x)).value().to_vector();
    for (std::size_t i = 0; i < b.y.size(); ++i) {
      const float* row = logits.data() + i * 10;
      correct += std::max_element(row, row + 10) - row == b.y[i];
    }
  }
  return static_cast<double>(correct) / static_cast<double>(test.size());
}

void check(numerics::Format half) {
  const double accuracy = one_epoch_accuracy(half);
  std::printf("fashion-mnist mlp, one epoch, %s: test accuracy %.4f\n",
              std::string(numerics::name(half)).c_str(), accuracy);
  EXPECT_GE(accuracy, 0.85);
}

TEST(FashionMnistMlp, OneEpochFloat32) {
  check(numerics::Format::float32);
}
TEST(FashionMnistMlp, OneEpochBFloat16) {
  check(numerics::Format::bfloat16);
}

}  // namespace
}  // namespace mantissa::data
