// A hand-written mixed-precision training loop in the shape of the vendor's example usage:
// scale the loss, backward, unscale, clip, step if finite, update the scale. It trains a
// small MLP on synthetic data under float16 with dynamic loss scaling and prints the loss.
//   build/examples/custom_loop
#include <cstdio>

#include "mantissa/amp/autocast.hpp"
#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/optim/clip.hpp"
#include "mantissa/tensor/random.hpp"
#include "toy_data.hpp"

namespace ag = mantissa::autograd;
using mantissa::autograd::Variable;
using mantissa::tensor::Tensor;

int main() {
  // cstorch.amp.set_half_dtype("float16") and autocast(), under the same names.
  mantissa::amp::set_half_dtype(mantissa::numerics::Format::float16);
  auto autocast = mantissa::amp::autocast();

  mantissa::tensor::Rng rng(0);
  Tensor w1 = Tensor::empty({64, 16}), w2 = Tensor::empty({4, 64});
  rng.fill_normal(w1, 0.0f, 0.25f);
  rng.fill_normal(w2, 0.0f, 0.15f);
  std::vector<Variable> params = {Variable(w1, true), Variable(Tensor::zeros({64}), true),
                                  Variable(w2, true), Variable(Tensor::zeros({4}), true)};
  mantissa::optim::ParamGroup group;
  group.params = params;
  group.names = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  group.learning_rate = mantissa::optim::sequential(
      {mantissa::optim::linear(0.0, 0.05, 20), mantissa::optim::cosine_decay(0.05, 0.0, 180)},
      {20});
  auto optimizer = mantissa::optim::make_optimizer(mantissa::optim::AdamW{}, {group});

  // grad_scaler = GradScaler(loss_scale="dynamic")
  mantissa::amp::GradScaler grad_scaler(
      mantissa::amp::GradScalerOptions::defaults_for(mantissa::numerics::Format::float16));

  ToyData data(/*features=*/16, /*classes=*/4);
  for (int step = 0; step < 200; ++step) {
    const ToyBatch batch = data.next(32);
    const Variable x(batch.x);
    const Variable hidden = ag::gelu(ag::linear(x, params[0], params[1]));
    const Variable loss = ag::cross_entropy(ag::linear(hidden, params[2], params[3]), batch.y);

    ag::backward(grad_scaler.scale(loss));         // scale the loss, then backward
    grad_scaler.unscale_(*optimizer);              // unscale gradients in place
    grad_scaler.clip_grad_norm_(*optimizer, 1.0);  // global gradient clipping
    grad_scaler.step_if_finite(*optimizer);        // step (skipped on inf/NaN)
    grad_scaler.update();                          // adapt the loss scale
    optimizer->zero_grad();

    if (step % 25 == 0 || step == 199) {
      std::printf("step %3d  loss %.4f  loss_scale %g  lr %.4f  skipped %lld\n", step,
                  loss.value().item(), grad_scaler.get_scale(), optimizer->current_learning_rate(),
                  static_cast<long long>(grad_scaler.num_skipped_steps()));
    }
  }
  return 0;
}
