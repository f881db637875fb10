#pragma once
// Layers built from autograd ops.
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/nn/module.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::nn {

// Weight [out, in] (PyTorch layout), optional bias [out]; init N(0, std), bias 0. With a
// quantization state attached (amp::QuantizedLayers) and the policy's fp8 on, its products
// run under that state's recipe (precision/recipe.hpp).
class Linear : public Module {
 public:
  Linear(std::int64_t in, std::int64_t out, bool bias, tensor::Rng& rng, float init_std);
  Variable forward(const Variable& x) const;
  Variable weight, bias;
  std::shared_ptr<precision::LinearQuant> quant;
};

// Every Linear under `root` by module name ("blocks.0.fc"), in registration order.
std::vector<std::pair<std::string, Linear*>> linear_layers(Module& root);

class Embedding : public Module {
 public:
  Embedding(std::int64_t num, std::int64_t dim, tensor::Rng& rng, float init_std);
  Variable forward(const std::vector<std::int32_t>& ids, const Shape& ids_shape) const;
  Variable weight;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::int64_t dim, float eps = 1e-5f);
  Variable forward(const Variable& x) const;
  Variable weight, bias;
  float eps;
};

// Causal multi-head self-attention: qkv projection, fused attention, output projection.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(std::int64_t dim, std::int64_t heads, tensor::Rng& rng, float init_std,
                      float proj_std);
  Variable forward(const Variable& x) const;  // [b, t, dim]
  std::shared_ptr<Linear> qkv, proj;
  std::int64_t heads;
};

// Pre-LN transformer block: x + proj(attn(ln1(x))), then x + out(gelu(fc(ln2(x)))), with
// dropout on both residual branches.
class TransformerBlock : public Module {
 public:
  TransformerBlock(std::int64_t dim, std::int64_t heads, std::int64_t filter, float dropout,
                   tensor::Rng& rng, float init_std, float proj_std);
  Variable forward(const Variable& x, tensor::Rng& dropout_rng) const;
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<Linear> fc, out;
  float dropout;
};

class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
         std::int64_t padding, tensor::Rng& rng);
  Variable forward(const Variable& x) const;
  Variable weight, bias;
  std::int64_t stride, padding;
};

}  // namespace mantissa::nn
