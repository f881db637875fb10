#include "mantissa/nn/models.hpp"

#include <cmath>
#include <string>
#include <string_view>

#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"
#include "support/number_text.hpp"

namespace mantissa::nn {
namespace ag = autograd;
namespace {

void positive(std::int64_t v, std::string_view key, const std::string& field) {
  if (v < 1) {
    throw Error(std::string(key) + "." + field + ": " + std::to_string(v) + " must be >= 1");
  }
}

}  // namespace

void GptConfig::validate(std::string_view key) const {
  positive(vocab_size, key, "vocab_size");
  positive(max_position_embeddings, key, "max_position_embeddings");
  positive(hidden_size, key, "hidden_size");
  positive(num_hidden_layers, key, "num_hidden_layers");
  positive(num_heads, key, "num_heads");
  positive(filter_size, key, "filter_size");
  if (hidden_size % num_heads != 0) {
    throw Error(std::string(key) + ".num_heads: " + std::to_string(num_heads) +
                " must divide hidden_size " + std::to_string(hidden_size));
  }
  if (!(dropout_rate >= 0.0f && dropout_rate < 1.0f)) {
    throw Error(std::string(key) + ".dropout_rate: " + support::value_text(dropout_rate) +
                " must be in [0, 1)");
  }
  if (!(init_std >= 0.0f && init_std <= kMaxInitStd)) {
    throw Error(std::string(key) + ".initializer_range: " + support::value_text(init_std) +
                " must be in [0, " + support::value_text(kMaxInitStd) +
                "] (a standard deviation; larger ones give infinite initial weights)");
  }
}

std::int64_t GptConfig::parameter_count() const {
  const std::int64_t h = hidden_size, f = filter_size;
  SizeSum block;  // ln1, qkv, proj, ln2, fc, out (every Linear with its bias)
  block.add({2, h}).add({3, h, h}).add({3, h}).add({h, h}).add({h});
  block.add({2, h}).add({h, f}).add({f}).add({f, h}).add({h});
  SizeSum n;
  n.add({vocab_size, h}).add({max_position_embeddings, h});
  n.add({num_hidden_layers, block.total()}).add({2, h});  // blocks, lnf
  if (!tie_embeddings) n.add({vocab_size, h});            // head
  return n.total();
}

Gpt::Gpt(const GptConfig& c, std::uint64_t seed) : config_(c), dropout_rng_(seed ^ 0xd509u) {
  c.validate();
  tensor::Rng rng(seed);
  const float proj_std = c.init_std / std::sqrt(2.0f * static_cast<float>(c.num_hidden_layers));
  wte_ = register_module("wte",
                         std::make_shared<Embedding>(c.vocab_size, c.hidden_size, rng, c.init_std));
  wpe_ = register_module("wpe", std::make_shared<Embedding>(c.max_position_embeddings,
                                                            c.hidden_size, rng, c.init_std));
  for (std::int64_t i = 0; i < c.num_hidden_layers; ++i) {
    blocks_.push_back(register_module(
        "blocks." + std::to_string(i),
        std::make_shared<TransformerBlock>(c.hidden_size, c.num_heads, c.filter_size,
                                           c.dropout_rate, rng, c.init_std, proj_std)));
  }
  lnf_ = register_module("lnf", std::make_shared<LayerNorm>(c.hidden_size));
  if (!c.tie_embeddings) {
    head_ = register_module(
        "head", std::make_shared<Linear>(c.hidden_size, c.vocab_size, false, rng, c.init_std));
  } else {
    tied_head_ = std::make_shared<const std::string>("head");  // wte's weight as the head
  }
  name_layers();
}

Variable Gpt::logits(const std::vector<std::int32_t>& ids, std::int64_t batch, std::int64_t t) {
  if (t > config_.max_position_embeddings) {
    throw Error("gpt: sequence length " + std::to_string(t) + " exceeds max_position_embeddings " +
                std::to_string(config_.max_position_embeddings));
  }
  std::vector<std::int32_t> positions(static_cast<std::size_t>(batch * t));
  for (std::int64_t i = 0; i < batch * t; ++i)
    positions[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % t);
  Variable x =
      ag::add(wte_->forward(ids, Shape{batch, t}), wpe_->forward(positions, Shape{batch, t}));
  x = ag::dropout(x, config_.dropout_rate, is_training(), dropout_rng_);
  for (const auto& b : blocks_) x = b->forward(x, dropout_rng_);
  const Variable h = lnf_->forward(x);
  const Variable y = head_ ? head_->forward(h) : [&] {
    const precision::LayerScope layer(tied_head_);
    return ag::linear(h, wte_->weight, Variable());
  }();
  return ag::reshape(y, Shape{batch * t, config_.vocab_size});
}

Variable Gpt::loss(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
                   std::int64_t batch, std::int64_t t) {
  return ag::cross_entropy(logits(ids, batch, t), targets);
}

void MlpConfig::validate(std::string_view key) const {
  positive(input_size, key, "input_size");
  positive(num_classes, key, "num_classes");
  for (std::size_t i = 0; i < hidden_sizes.size(); ++i) {
    positive(hidden_sizes[i], key, "hidden_sizes[" + std::to_string(i) + "]");
  }
}

std::int64_t MlpConfig::parameter_count() const {
  SizeSum n;
  std::int64_t in = input_size;
  for (std::int64_t out : hidden_sizes) {
    n.add({in, out}).add({out});
    in = out;
  }
  return n.add({in, num_classes}).add({num_classes}).total();
}

Mlp::Mlp(const MlpConfig& c, std::uint64_t seed) : config_(c) {
  c.validate();
  tensor::Rng rng(seed);
  std::int64_t in = c.input_size;
  std::vector<std::int64_t> widths = c.hidden_sizes;
  widths.push_back(c.num_classes);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    // Kaiming-normal for the hidden layers, a small head.
    const float std_dev = i + 1 < widths.size() ? std::sqrt(2.0f / static_cast<float>(in))
                                                : 1.0f / std::sqrt(static_cast<float>(in));
    layers_.push_back(register_module("layers." + std::to_string(i),
                                      std::make_shared<Linear>(in, widths[i], true, rng, std_dev)));
    in = widths[i];
  }
  name_layers();
}

Variable Mlp::logits(const Variable& x) {
  Variable h = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i]->forward(h);
    if (i + 1 < layers_.size())
      h = config_.activation == Activation::relu ? ag::relu(h) : ag::gelu(h);
  }
  return h;
}

void CnnConfig::validate(std::string_view key) const {
  positive(channels, key, "channels");
  positive(conv1_channels, key, "conv1_channels");
  positive(conv2_channels, key, "conv2_channels");
  positive(num_classes, key, "num_classes");
  if (height % 4 != 0 || width % 4 != 0 || height < 4 || width < 4) {
    throw Error(std::string(key) + ": the CNN needs height and width divisible by 4 (got " +
                std::to_string(height) + "x" + std::to_string(width) + ")");
  }
}

std::int64_t CnnConfig::parameter_count() const {
  SizeSum n;
  n.add({conv1_channels, channels, 9}).add({conv1_channels});
  n.add({conv2_channels, conv1_channels, 9}).add({conv2_channels});
  return n.add({conv2_channels, height / 4, width / 4, num_classes}).add({num_classes}).total();
}

Cnn::Cnn(const CnnConfig& c, std::uint64_t seed) : config_(c) {
  c.validate();
  tensor::Rng rng(seed);
  conv1_ = register_module("conv1",
                           std::make_shared<Conv2d>(c.channels, c.conv1_channels, 3, 1, 1, rng));
  conv2_ = register_module(
      "conv2", std::make_shared<Conv2d>(c.conv1_channels, c.conv2_channels, 3, 1, 1, rng));
  const std::int64_t flat = c.conv2_channels * (c.height / 4) * (c.width / 4);
  head_ =
      register_module("head", std::make_shared<Linear>(flat, c.num_classes, true, rng,
                                                       1.0f / std::sqrt(static_cast<float>(flat))));
  name_layers();
}

Variable Cnn::logits(const Variable& x) {
  Variable h = ag::relu_max_pool2d(conv1_->forward(x), 2, 2);
  h = ag::relu_max_pool2d(conv2_->forward(h), 2, 2);
  const std::int64_t n = x.shape()[0];
  return head_->forward(ag::reshape(h, Shape{n, h.value().numel() / n}));
}

}  // namespace mantissa::nn
