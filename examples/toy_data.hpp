// The hand-written loops' synthetic data: `classes` classes, an example of class c being
// Gaussian noise (sigma 1.2) plus 1.5 on every feature d with d % classes == c.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "mantissa/tensor/tensor.hpp"

struct ToyBatch {
  mantissa::tensor::Tensor x;   // [rows, features] float32
  std::vector<std::int32_t> y;  // [rows] class indices
};

class ToyData {
 public:
  ToyData(int features, int classes, unsigned seed = 1)
      : features_(features), classes_(classes), rng_(seed) {}

  ToyBatch next(int rows) {
    std::vector<float> xs(static_cast<std::size_t>(rows) * features_);
    std::vector<std::int32_t> ys(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) {
      ys[i] = static_cast<std::int32_t>(rng_() % static_cast<unsigned>(classes_));
      for (int d = 0; d < features_; ++d) {
        xs[i * features_ + d] = noise_(rng_) + (d % classes_ == ys[i] ? 1.5f : 0.0f);
      }
    }
    return {mantissa::tensor::Tensor::from_vector(xs, {rows, features_}), std::move(ys)};
  }

 private:
  int features_, classes_;
  std::mt19937 rng_;
  std::normal_distribution<float> noise_{0.0f, 1.2f};
};
