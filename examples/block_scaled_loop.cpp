// Block-scaled linear layers in a hand-written loop: amp::QuantizedLayers attaches a recipe
// (precision/recipe.hpp) to every Linear of a module, with per-layer overrides by
// parameter-name pattern; with the policy's fp8 on (the switch for every recipe), their
// products take the recipe's quantized operands. Here NVFP4 (e2m1 elements, e4m3 scales per
// 16, a float32 scale per tensor, Hadamard-rotated weight-gradient operands, stochastically
// rounded gradients) with the classifier head kept in MXFP8. The state a checkpoint holds:
// state_tensors() (the rotation signs) and stochastic_position() (where the rounding stream
// is). It trains a small MLP on synthetic data (bfloat16 elsewhere, no loss scaler).
//   build/examples/block_scaled_loop
#include <cstdio>
#include <random>

#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/optimizer.hpp"
#include "mantissa/precision/policy.hpp"

namespace ag = mantissa::autograd;
namespace precision = mantissa::precision;
using mantissa::autograd::Variable;
using mantissa::tensor::Tensor;

int main() {
  precision::RecipeSettings recipe;
  recipe.recipe = precision::Recipe::nvfp4;
  recipe.layers = {{"layers.1.*", precision::Recipe::mxfp8}};  // the head in MXFP8

  mantissa::nn::MlpConfig shape;
  shape.input_size = 32;
  shape.hidden_sizes = {64};
  shape.num_classes = 32;  // 4 classes used; 32 outputs keep the MX blocks whole
  shape.activation = mantissa::nn::Activation::gelu;
  mantissa::nn::Mlp model(shape, /*seed=*/0);
  mantissa::amp::QuantizedLayers layers(model, recipe, /*seed=*/1);
  for (const std::string& line : layers.describe_plan()) std::printf("%s\n", line.c_str());

  mantissa::optim::ParamGroup group;
  for (const auto& [name, p] : model.named_parameters()) {
    group.names.push_back(name);
    group.params.push_back(p);
  }
  group.learning_rate = mantissa::optim::constant(0.01);
  auto optimizer = mantissa::optim::make_optimizer(mantissa::optim::AdamW{}, {group});

  precision::Fp8Settings on;  // the switch: the attached recipes are used
  on.enabled = true;
  precision::Autocast cast(precision::Policy(mantissa::numerics::Format::bfloat16, 1,
                                             precision::MatmulRoute::automatic, on));
  std::mt19937 data(1);
  std::normal_distribution<float> noise(0.0f, 1.2f);
  for (int step = 0; step < 200; ++step) {
    std::vector<float> xs(32 * 32);
    std::vector<std::int32_t> ys(32);
    for (int i = 0; i < 32; ++i) {
      ys[i] = static_cast<std::int32_t>(data() % 4);
      for (int d = 0; d < 32; ++d) xs[i * 32 + d] = noise(data) + (d % 4 == ys[i] ? 1.5f : 0.0f);
    }
    const Variable loss =
        ag::cross_entropy(model.logits(Variable(Tensor::from_vector(xs, {32, 32}))), ys);
    ag::backward(loss);
    optimizer->step();
    optimizer->zero_grad();
    layers.update();  // (delayed layers' histories; nothing for the just-in-time recipes)
    if (step % 50 == 0 || step == 199) {
      std::printf("step %3d  loss %.4f  stochastic position %llu\n", step, loss.value().item(),
                  static_cast<unsigned long long>(layers.stochastic_position()));
    }
  }
  for (const auto& [name, t] : layers.state_tensors()) {
    std::printf("state %s %s\n", name.c_str(), t.shape().to_string().c_str());
  }
  return 0;
}
