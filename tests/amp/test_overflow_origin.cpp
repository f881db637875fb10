// Overflow attribution through the vendor-style step: an MLP in float16 whose middle layer is
// made to overflow its backward (weights 2^14: the forward stays finite, the gradient it passes
// back is multiplied by 8 x 2^14). The skipped step names that layer, while every parameter
// before it holds a non-finite gradient by the end of the backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "error_of.hpp"
#include "mantissa/amp/autocast.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/nn/models.hpp"

namespace mantissa::testing {
namespace {

struct OverflowingMlp {
  nn::Mlp model{nn::MlpConfig{4, {8, 8}, 3, nn::Activation::relu}, 5};
  std::unique_ptr<optim::Optimizer> opt;
  OverflowingMlp() {
    optim::ParamGroup g;
    for (const auto& [name, p] : model.named_parameters()) {
      g.params.push_back(p);
      g.names.push_back(name);
    }
    g.learning_rate = optim::constant(0.01);
    opt = optim::make_optimizer(optim::Sgd{}, {g});
    for (auto& [name, p] : model.named_parameters()) {
      if (name != "layers.1.weight") continue;
      std::fill(p.mutable_value().f32(), p.mutable_value().f32() + p.value().numel(), 16384.0f);
      p.bump_version();
    }
  }
  autograd::Variable loss() {
    const autograd::Variable x(tensor::Tensor::full({2, 4}, 0.01f));
    return autograd::cross_entropy(model.logits(x), {0, 1});
  }
};

TEST(OverflowOrigin, TheSkippedStepNamesTheLayerThatOverflowed) {
  OverflowingMlp m;
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  amp::GradScaler scaler(o);
  const precision::Autocast cast(precision::Policy(numerics::Format::float16));
  const autograd::Variable loss = m.loss();
  ASSERT_TRUE(std::isfinite(loss.value().item()));  // the forward is finite
  const amp::StepReport r = amp::optimizer_step(loss, *m.opt, scaler);
  EXPECT_FALSE(r.stepped);
  ASSERT_TRUE(r.nonfinite_origin.has_value());
  EXPECT_EQ(
      *r.nonfinite_origin,
      (autograd::NonfiniteOrigin{"linear", "layers.1", autograd::NonfiniteGradient::input_grad}));
  // The parameters' list shows where it spread: layer 0, before the overflow in backward
  // order, is in it; layer 2, after it, is not.
  const auto& params = r.nonfinite_params;
  EXPECT_NE(std::find(params.begin(), params.end(), "layers.0.weight"), params.end());
  EXPECT_EQ(std::find(params.begin(), params.end(), "layers.2.weight"), params.end());
}

TEST(OverflowOrigin, AFiniteStepHasNoOrigin) {
  OverflowingMlp m;
  for (auto& [name, p] : m.model.named_parameters()) {
    if (name != "layers.1.weight") continue;
    std::fill(p.mutable_value().f32(), p.mutable_value().f32() + p.value().numel(), 0.25f);
    p.bump_version();
  }
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  amp::GradScaler scaler(o);
  const precision::Autocast cast(precision::Policy(numerics::Format::float16));
  const amp::StepReport r = amp::optimizer_step(m.loss(), *m.opt, scaler);
  EXPECT_TRUE(r.stepped);
  EXPECT_FALSE(r.nonfinite_origin.has_value());
}

TEST(OverflowOrigin, RaiseSaysWhereTheBackwardWentNonFinite) {
  OverflowingMlp m;
  amp::GradScalerOptions o;
  o.dynamic = false;
  o.static_scale = 1024;
  o.on_nonfinite = amp::NonFinitePolicy::raise;
  amp::GradScaler scaler(o);
  const precision::Autocast cast(precision::Policy(numerics::Format::float16));
  const std::string what = error_of([&] { amp::optimizer_step(m.loss(), *m.opt, scaler); });
  EXPECT_NE(what.find("non-finite gradients at loss scale 2^10 in layers.0.weight"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("; first in the backward of linear in layers.1"), std::string::npos) << what;
}

}  // namespace
}  // namespace mantissa::testing
