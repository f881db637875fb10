#pragma once
// The models the trainer builds from config fields: GPT, MLP, CNN.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/names.hpp"
#include "mantissa/nn/layers.hpp"

namespace mantissa::nn {

struct GptConfig {
  std::int64_t vocab_size = 256;
  std::int64_t max_position_embeddings = 256;
  std::int64_t hidden_size = 384;
  std::int64_t num_hidden_layers = 6;
  std::int64_t num_heads = 6;
  std::int64_t filter_size = 1536;  // MLP width (4 x hidden_size in GPT-ref)
  float dropout_rate = 0.0f;
  bool tie_embeddings = false;  // head shares wte's weight
  float init_std = 0.02f;       // GPT-2 init; residual projections get init_std / sqrt(2 L)
  // The largest init_std taken: a normal sample reaches ~7 standard deviations, so past this
  // the initial weights would overflow float32 to infinity.
  static constexpr double kMaxInitStd = 1e37;
  // Throws mantissa::Error naming the field under `key` (the trainer passes the config's
  // path, "trainer.init.model"; "model.num_heads: ...").
  void validate(std::string_view key = "model") const;
  // The model's parameter count, computed without building it (INT64_MAX when it passes
  // int64): what a config from a file is checked against before anything is allocated.
  std::int64_t parameter_count() const;
};

// GPT with learned positions, pre-LN blocks, final LayerNorm and a bias-free head; the PyTorch
// peer bench/peer_torch_gpt.py builds the same parameter shapes from a config.
class Gpt : public Module {
 public:
  Gpt(const GptConfig& config, std::uint64_t seed);
  // ids: batch x t tokens, row-major -> logits [batch * t, vocab].
  Variable logits(const std::vector<std::int32_t>& ids, std::int64_t batch, std::int64_t t);
  // Mean next-token cross-entropy.
  Variable loss(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
                std::int64_t batch, std::int64_t t);
  const GptConfig& config() const { return config_; }
  tensor::Rng& dropout_rng() { return dropout_rng_; }
  tensor::RngState dropout_rng_state() const { return dropout_rng_.state(); }

 private:
  GptConfig config_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  std::shared_ptr<LayerNorm> lnf_;
  std::shared_ptr<Linear> head_;
  precision::LayerName tied_head_;  // the layer the tied head's product runs in
  tensor::Rng dropout_rng_;
};

enum class Activation { relu, gelu };
inline constexpr NameTable<Activation, 2> kActivationNames = {
    {{"relu", Activation::relu}, {"gelu", Activation::gelu}}};
static_assert(in_enum_order(kActivationNames, static_cast<std::size_t>(Activation::gelu) + 1));

struct MlpConfig {
  std::int64_t input_size = 784;
  std::vector<std::int64_t> hidden_sizes = {256};
  std::int64_t num_classes = 10;
  Activation activation = Activation::relu;
  void validate(std::string_view key = "model") const;  // as GptConfig's
  std::int64_t parameter_count() const;                 // as GptConfig's
};

class Mlp : public Module {
 public:
  Mlp(const MlpConfig& config, std::uint64_t seed);
  Variable logits(const Variable& x);  // x [n, input_size]
 private:
  MlpConfig config_;
  std::vector<std::shared_ptr<Linear>> layers_;
};

struct CnnConfig {
  std::int64_t channels = 1, height = 28,
               width = 28;  // the input images' (the trainer: the dataset's)
  std::int64_t conv1_channels = 16, conv2_channels = 32;
  std::int64_t num_classes = 10;
  void validate(std::string_view key = "model") const;  // as GptConfig's
  std::int64_t parameter_count() const;                 // as GptConfig's
};

// conv3x3 -> relu -> maxpool2 -> conv3x3 -> relu -> maxpool2 -> linear.
class Cnn : public Module {
 public:
  Cnn(const CnnConfig& config, std::uint64_t seed);
  Variable logits(const Variable& x);  // x [n, channels, height, width]
 private:
  CnnConfig config_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Linear> head_;
};

}  // namespace mantissa::nn
