// The vendor's example usage (cerebras.pytorch.amp), transcribed line for line into
// mantissa's C++ API. Each Python line is quoted above its C++ twin. It trains a small MLP on
// synthetic data in cbfloat16 and prints the last step.
//   build/examples/seed_api
#include <cstdio>
#include <random>

#include "mantissa/amp/autocast.hpp"
#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/clip.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace amp = mantissa::amp;
namespace optim = mantissa::optim;
using mantissa::autograd::Variable;
using mantissa::tensor::Tensor;

// A batch of 32 noisy points in 4 classes (16 features).
struct Batch {
  Variable x;
  std::vector<std::int32_t> y;
};
Batch next_batch(std::mt19937& data) {
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> xs(32 * 16);
  std::vector<std::int32_t> ys(32);
  for (int i = 0; i < 32; ++i) {
    ys[i] = static_cast<std::int32_t>(data() % 4);
    for (int d = 0; d < 16; ++d) xs[i * 16 + d] = noise(data) + (d % 4 == ys[i] ? 1.5f : 0.0f);
  }
  return {Variable(Tensor::from_vector(xs, {32, 16})), ys};
}

int main() {
  // cstorch.amp.set_half_dtype("cbfloat16")
  amp::set_half_dtype("cbfloat16");
  auto autocast = amp::autocast();

  mantissa::nn::MlpConfig config;
  config.input_size = 16;
  config.hidden_sizes = {64};
  config.num_classes = 4;
  mantissa::nn::Mlp model(config, /*seed=*/0);
  // optimizer = cstorch.optim.AdamW(model.parameters(), lr=1e-3)
  auto optimizer = optim::make_optimizer(optim::AdamW{}, model.parameters(), 1e-3);

  // grad_scaler = cstorch.amp.GradScaler(loss_scale="dynamic")
  amp::GradScaler grad_scaler("dynamic");

  std::mt19937 data(1);
  Variable loss;
  for (int step = 0; step < 100; ++step) {
    const Batch b = next_batch(data);
    // loss: torch.Tensor = ...
    loss = mantissa::autograd::cross_entropy(model.logits(b.x), b.y);

    // # Scale the loss before calling the backward pass
    // grad_scaler.scale(loss).backward()
    grad_scaler.scale(loss).backward();

    // # Unscales the gradients of optimizer's assigned params in-place
    // grad_scaler.unscale_(optimizer)
    grad_scaler.unscale_(*optimizer);

    // # Global gradient clipping
    // torch.nn.utils.clip_grad_norm_(
    //     model.parameters(),
    //     1.0,  # max gradient norm
    // )
    optim::clip_grad_norm_(model.parameters(),
                           1.0  // max gradient norm
    );

    // # Step the optimizer using the grad scaler
    // grad_scaler.step(optimizer)
    grad_scaler.step(*optimizer);

    // # update the grad scaler once all optimizers have been stepped
    // grad_scaler.update()
    grad_scaler.update();
    optimizer->zero_grad();
  }
  std::printf("grad_scaler loop: step 99  loss %.4f  loss_scale %g  skipped %lld\n",
              loss.value().item(), grad_scaler.get_scale(),
              static_cast<long long>(grad_scaler.num_skipped_steps()));

  // The one-call form: cstorch.amp.optimizer_step(loss, optimizer, grad_scaler,
  //                                                max_gradient_norm=1.0)
  for (int step = 0; step < 100; ++step) {
    const Batch b = next_batch(data);
    loss = mantissa::autograd::cross_entropy(model.logits(b.x), b.y);
    amp::optimizer_step(loss, *optimizer, grad_scaler, /*max_gradient_norm=*/1.0);
  }
  std::printf("optimizer_step loop: step 199  loss %.4f  loss_scale %g  skipped %lld\n",
              loss.value().item(), grad_scaler.get_scale(),
              static_cast<long long>(grad_scaler.num_skipped_steps()));
  return 0;
}
