#include "mantissa/nn/layers.hpp"

#include <cmath>

#include "mantissa/error.hpp"

namespace mantissa::nn {
namespace ag = autograd;
namespace {

Tensor normal(const Shape& s, tensor::Rng& rng, float stddev) {
  Tensor t = Tensor::empty(s);
  rng.fill_normal(t, 0.0f, stddev);
  return t;
}

}  // namespace

Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias, tensor::Rng& rng,
               float init_std) {
  weight = register_parameter("weight", normal({out, in}, rng, init_std));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

Variable Linear::forward(const Variable& x) const {
  const precision::LayerScope layer(layer_name());
  return ag::linear(x, weight, bias, quant);
}

std::vector<std::pair<std::string, Linear*>> linear_layers(Module& root) {
  std::vector<std::pair<std::string, Linear*>> out;
  root.for_each_module([&](const std::string& name, Module& m) {
    if (auto* linear = dynamic_cast<Linear*>(&m)) out.emplace_back(name, linear);
  });
  return out;
}

Embedding::Embedding(std::int64_t num, std::int64_t dim, tensor::Rng& rng, float init_std) {
  weight = register_parameter("weight", normal({num, dim}, rng, init_std));
}

Variable Embedding::forward(const std::vector<std::int32_t>& ids, const Shape& ids_shape) const {
  const precision::LayerScope layer(layer_name());
  return ag::embedding(weight, ids, ids_shape);
}

LayerNorm::LayerNorm(std::int64_t dim, float e) : eps(e) {
  weight = register_parameter("weight", Tensor::full({dim}, 1.0f));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

Variable LayerNorm::forward(const Variable& x) const {
  const precision::LayerScope layer(layer_name());
  return ag::layer_norm(x, weight, bias, eps);
}

CausalSelfAttention::CausalSelfAttention(std::int64_t dim, std::int64_t h, tensor::Rng& rng,
                                         float init_std, float proj_std)
    : heads(h) {
  if (h < 1 || dim % h != 0) {
    throw Error("num_heads: " + std::to_string(h) + " must divide hidden_size " +
                std::to_string(dim));
  }
  qkv = register_module("qkv", std::make_shared<Linear>(dim, 3 * dim, true, rng, init_std));
  proj = register_module("proj", std::make_shared<Linear>(dim, dim, true, rng, proj_std));
}

Variable CausalSelfAttention::forward(const Variable& x) const {
  const precision::LayerScope layer(layer_name());
  return proj->forward(ag::causal_self_attention(qkv->forward(x), heads));
}

TransformerBlock::TransformerBlock(std::int64_t dim, std::int64_t heads, std::int64_t filter,
                                   float p, tensor::Rng& rng, float init_std, float proj_std)
    : dropout(p) {
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(dim));
  attn = register_module(
      "attn", std::make_shared<CausalSelfAttention>(dim, heads, rng, init_std, proj_std));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(dim));
  fc = register_module("fc", std::make_shared<Linear>(dim, filter, true, rng, init_std));
  out = register_module("out", std::make_shared<Linear>(filter, dim, true, rng, proj_std));
}

Variable TransformerBlock::forward(const Variable& x, tensor::Rng& rng) const {
  const precision::LayerScope layer(layer_name());
  const bool training = is_training();
  Variable h = ag::add(x, ag::dropout(attn->forward(ln1->forward(x)), dropout, training, rng));
  return ag::add(
      h, ag::dropout(out->forward(ag::gelu(fc->forward(ln2->forward(h)))), dropout, training, rng));
}

Conv2d::Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t s,
               std::int64_t p, tensor::Rng& rng)
    : stride(s), padding(p) {
  // Kaiming-normal for ReLU: std = sqrt(2 / fan_in).
  const float std_dev = std::sqrt(2.0f / static_cast<float>(in * kernel * kernel));
  weight = register_parameter("weight", normal({out, in, kernel, kernel}, rng, std_dev));
  bias = register_parameter("bias", Tensor::zeros({out}));
}

Variable Conv2d::forward(const Variable& x) const {
  const precision::LayerScope layer(layer_name());
  return ag::conv2d(x, weight, bias, stride, padding);
}

}  // namespace mantissa::nn
