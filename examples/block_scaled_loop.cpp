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

#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/optimizer.hpp"
#include "mantissa/precision/policy.hpp"
#include "toy_data.hpp"

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

  auto optimizer =
      mantissa::optim::make_optimizer(mantissa::optim::AdamW{}, model.parameters(), 0.01);

  precision::Fp8Settings on;  // the switch: the attached recipes are used
  on.enabled = true;
  precision::Autocast cast(precision::Policy(mantissa::numerics::Format::bfloat16, 1,
                                             precision::MatmulRoute::automatic, on));
  ToyData data(/*features=*/32, /*classes=*/4);
  for (int step = 0; step < 200; ++step) {
    const ToyBatch batch = data.next(32);
    const Variable loss = ag::cross_entropy(model.logits(Variable(batch.x)), batch.y);
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
