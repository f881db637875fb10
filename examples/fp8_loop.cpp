// fp8 linear layers in a hand-written loop: amp::Fp8Layers attaches a delayed-scaling state
// (precision/fp8.hpp) to every Linear of a module; with the policy's fp8 on, their products
// take fp8 inputs. After each optimizer step, update() moves the amax histories and scales
// on; take_window() gives the casts' overflows and underflows since the last call, and
// state_tensors() / load_state_tensors() save and restore the scaling state with a
// checkpoint. It trains a small MLP on synthetic data (bfloat16 elsewhere, no loss scaler).
//   build/examples/fp8_loop
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
  precision::Fp8Settings fp8;
  fp8.enabled = true;
  fp8.recipe = precision::Fp8Recipe::hybrid;  // e4m3 forward, e5m2 gradients
  fp8.history_length = 16;

  mantissa::nn::MlpConfig shape;
  shape.input_size = 16;
  shape.hidden_sizes = {64};
  shape.num_classes = 4;
  shape.activation = mantissa::nn::Activation::gelu;
  mantissa::nn::Mlp model(shape, /*seed=*/0);
  mantissa::amp::Fp8Layers fp8_layers(model, fp8);  // one state per Linear: fc layers 0 and 1

  auto optimizer =
      mantissa::optim::make_optimizer(mantissa::optim::AdamW{}, model.parameters(), 0.01);

  // bfloat16 activations, fp8 products in the Linear layers.
  precision::Autocast cast(precision::Policy(mantissa::numerics::Format::bfloat16, 1,
                                             precision::MatmulRoute::automatic, fp8));
  ToyData data(/*features=*/16, /*classes=*/4);
  for (int step = 0; step < 200; ++step) {
    const ToyBatch batch = data.next(32);
    const Variable loss = ag::cross_entropy(model.logits(Variable(batch.x)), batch.y);
    ag::backward(loss);
    optimizer->step();
    optimizer->zero_grad();
    fp8_layers.update();  // the step's amaxes join the histories; the scales move on

    if (step % 50 == 0 || step == 199) {
      const mantissa::precision::Fp8WindowCounts w = fp8_layers.take_window();
      std::printf("step %3d  loss %.4f  fp8 layers %zu  overflows %lld  underflows %lld\n", step,
                  loss.value().item(), fp8_layers.size(), static_cast<long long>(w.overflows),
                  static_cast<long long>(w.underflows));
    }
  }
  // What a checkpoint holds of it: per layer, the amax history [3, 16] and the scales [3].
  for (const auto& [name, t] : fp8_layers.state_tensors()) {
    std::printf("state %s %s\n", name.c_str(), t.shape().to_string().c_str());
  }
  return 0;
}
