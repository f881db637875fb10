#pragma once
// The config the config tests start from (an MLP on Fashion-MNIST, float16 with dynamic loss
// scaling), and the check that overrides of it fail with a message holding a fragment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"

namespace mantissa::config {

inline const char* const kBase = R"(
trainer:
  init:
    seed: 3
    model: {name: mlp, input_size: 784, hidden_sizes: [32], num_classes: 10}
    optimizer: {AdamW: {learning_rate: 1.0e-3, weight_decay: 0.01}}
    schedulers:
      - SequentialLR:
          schedulers:
            - LinearLR: {initial_learning_rate: 0.0, end_learning_rate: 1.0e-3, total_iters: 10}
            - CosineDecayLR: {initial_learning_rate: 1.0e-3, end_learning_rate: 0.0, total_iters: 90}
          milestones: [10]
    precision: {fp16_type: float16, loss_scaling_factor: dynamic, max_gradient_norm: 1.0}
    loop: {max_steps: 100}
  fit:
    train_dataloader: {dataset: fashion_mnist, batch_size: 64}
)";

inline void expect_error(const std::vector<std::string>& overrides, const std::string& fragment) {
  try {
    parse_config(kBase, overrides, "test.yaml");
    FAIL() << "expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace mantissa::config
