// The GPT's and the MLP's forward logits and parameter gradients equal PyTorch 1.13's on the
// same weights and inputs (tools/fixtures/make_model_fixture.py; fixtures committed).
// Tolerance: 2e-5 absolute + 1e-4 relative (float32 in a different order of operations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/optimizer.hpp"
#include "mantissa/tensor/safetensors.hpp"

namespace mantissa::nn {
namespace {

tensor::SafetensorsFile fixture(const std::string& name) {
  return tensor::load_safetensors(std::string(MANTISSA_NN_FIXTURES) + "/" + name);
}

std::vector<std::int32_t> ids_of(const Tensor& t) {
  std::vector<std::int32_t> out;
  for (float v : t.to_vector()) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_vector(), w = want.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], 2e-5 + 1e-4 * std::fabs(w[i])) << what << " element " << i;
  }
}

template <class M>
void load_params(M& model, const tensor::SafetensorsFile& f) {
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : f.tensors) {
    if (name.rfind("param.", 0) == 0) state[name.substr(6)] = t;
  }
  model.load_state_dict(state);
}

template <class M>
void expect_gradients(const M& model, const tensor::SafetensorsFile& f) {
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), f.tensors.at("grad." + name), "gradient of " + name);
  }
}

TEST(ModelsVsTorch, Gpt) {
  const auto f = fixture("gpt.safetensors");
  GptConfig c;
  c.vocab_size = std::stoi(f.metadata.at("vocab_size"));
  c.max_position_embeddings = std::stoi(f.metadata.at("context"));
  c.hidden_size = std::stoi(f.metadata.at("hidden_size"));
  c.num_hidden_layers = std::stoi(f.metadata.at("num_hidden_layers"));
  c.num_heads = std::stoi(f.metadata.at("num_heads"));
  c.filter_size = std::stoi(f.metadata.at("filter_size"));
  const std::int64_t batch = std::stoi(f.metadata.at("batch"));
  Gpt gpt(c, 1);
  load_params(gpt, f);
  const Variable logits = gpt.logits(ids_of(f.tensors.at("ids")), batch, c.max_position_embeddings);
  expect_close(logits.value(), f.tensors.at("logits"), "gpt logits");
  const Variable loss = autograd::cross_entropy(logits, ids_of(f.tensors.at("targets")));
  EXPECT_NEAR(loss.value().item(), f.tensors.at("loss").item(), 1e-5);
  autograd::backward(loss);
  expect_gradients(gpt, f);
}

TEST(ModelsVsTorch, Mlp) {
  const auto f = fixture("mlp.safetensors");
  MlpConfig c;
  c.input_size = 12;
  c.hidden_sizes = {16, 8};
  c.num_classes = 5;
  Mlp mlp(c, 1);
  load_params(mlp, f);
  const Variable logits = mlp.logits(Variable(f.tensors.at("x")));
  expect_close(logits.value(), f.tensors.at("logits"), "mlp logits");
  const Variable loss = autograd::cross_entropy(logits, ids_of(f.tensors.at("targets")));
  EXPECT_NEAR(loss.value().item(), f.tensors.at("loss").item(), 1e-6);
  autograd::backward(loss);
  expect_gradients(mlp, f);
}

TEST(Models, GptRefShapeHasThePeersParameterCount) {
  // bench/peer_torch_gpt.py builds 10,942,464 parameters from configs/bench/gpt-ref.yaml
  // (d 384, 6 layers, context 256).
  GptConfig c;  // the defaults are GPT-ref
  Gpt gpt(c, 0);
  const std::int64_t d = 384, l = 6, v = 256, t = 256;
  const std::int64_t per_block =
      2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(gpt.parameter_count(), v * d + t * d + l * per_block + 2 * d + v * d);
  EXPECT_NEAR(static_cast<double>(gpt.parameter_count()) / 1e6, 10.94, 0.005);
}

TEST(Models, NamesAreHierarchical) {
  GptConfig c;
  c.num_hidden_layers = 1;
  Gpt gpt(c, 0);
  std::vector<std::string> names;
  for (const auto& [n, p] : gpt.named_parameters()) names.push_back(n);
  EXPECT_NE(std::find(names.begin(), names.end(), "blocks.0.attn.qkv.weight"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "lnf.bias"), names.end());
  c.tie_embeddings = true;
  Gpt tied(c, 0);
  EXPECT_EQ(tied.parameter_count(), gpt.parameter_count() - 256 * 384);
}

TEST(Models, CnnMapsImagesToClassLogitsAndLearns) {
  // Four random images with labels 3, 7, 1, 3: plain SGD on the cross-entropy must fit them.
  // The test fails when the CNN does not learn: if the loss does not fall to a tenth, or any
  // image is still given another class.
  Cnn cnn(CnnConfig{}, 3);
  tensor::Rng rng(4);
  Tensor x = Tensor::empty({4, 1, 28, 28});
  rng.fill_normal(x, 0.0f, 1.0f);
  const std::vector<std::int32_t> labels = {3, 7, 1, 3};
  optim::ParamGroup g;
  for (const auto& [name, p] : cnn.named_parameters()) g.params.push_back(p);
  g.learning_rate = optim::constant(0.05);
  auto opt = optim::make_optimizer(optim::Sgd{}, {g});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    const Variable logits = cnn.logits(Variable(x));
    ASSERT_EQ(logits.shape(), (Shape{4, 10}));
    const Variable loss = autograd::cross_entropy(logits, labels);
    (step == 0 ? first : last) = loss.value().item();
    autograd::backward(loss);
    for (const auto& [name, p] : cnn.named_parameters()) ASSERT_TRUE(p.grad().defined()) << name;
    opt->step();
    opt->zero_grad();
  }
  EXPECT_LT(last, first / 10) << "first " << first << ", last " << last;
  const std::vector<float> out = cnn.logits(Variable(x)).value().to_vector();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float* row = out.data() + i * 10;
    EXPECT_EQ(std::max_element(row, row + 10) - row, labels[i]) << "image " << i;
  }
}

TEST(Models, ParameterCountsAreKnownBeforeBuilding) {
  GptConfig g;  // GPT-ref's widths with two layers, untied and tied
  g.num_hidden_layers = 2;
  EXPECT_EQ(g.parameter_count(), Gpt(g, 0).parameter_count());
  g.tie_embeddings = true;
  EXPECT_EQ(g.parameter_count(), Gpt(g, 0).parameter_count());
  MlpConfig m;
  m.hidden_sizes = {64, 32};
  EXPECT_EQ(m.parameter_count(), Mlp(m, 0).parameter_count());
  CnnConfig c;
  c.height = 16;
  c.width = 12;
  EXPECT_EQ(c.parameter_count(), Cnn(c, 0).parameter_count());
  // Sizes that overflow int64 saturate: "more than anything can hold", never a wrapped value.
  g.hidden_size = std::int64_t{1} << 40;
  g.filter_size = std::int64_t{1} << 40;
  EXPECT_EQ(g.parameter_count(), INT64_MAX);
}

TEST(Models, ConfigErrorsNameTheField) {
  GptConfig c;
  c.num_heads = 5;
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.num_heads: 5 must divide hidden_size 384"),
              std::string::npos);
  }
  MlpConfig m;  // (an unknown activation word is the config parser's: tests/train)
  m.hidden_sizes = {16, 0};
  try {
    m.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.hidden_sizes[1]: 0 must be >= 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mantissa::nn
