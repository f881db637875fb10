// amp::QuantizedLayers: a recipe on every Linear with per-layer overrides by parameter-name
// pattern (first match wins), the plan it prints, the errors before any product (a pattern
// that matches no parameter, a block size that does not divide a layer's features), and the
// checkpoint state (delayed histories, nvfp4's rotation signs, the stochastic stream).
#include <gtest/gtest.h>

#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/layers.hpp"
#include "mantissa/nn/models.hpp"

namespace mantissa::amp {
namespace {

using precision::Recipe;

// layers.0: 64 -> 64, layers.1: 64 -> 32, layers.2 (the head): 32 -> 32.
nn::Mlp mlp(std::int64_t input = 64) {
  nn::MlpConfig c;
  c.input_size = input;
  c.hidden_sizes = {64, 32};
  c.num_classes = 32;
  return nn::Mlp(c, 1);
}

precision::RecipeSettings recipe(Recipe r, std::vector<precision::LayerOverride> layers = {}) {
  precision::RecipeSettings s;
  s.recipe = r;
  s.layers = std::move(layers);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(QuantizedLayers, OverridesByPatternFirstMatchWins) {
  nn::Mlp m = mlp();
  const QuantizedLayers q(m,
                          recipe(Recipe::mxfp4, {{"layers.2.*", std::nullopt},
                                                 {"layers.?.bias", Recipe::mxfp8},
                                                 {"*", Recipe::nvfp4}}),
                          7);
  ASSERT_EQ(q.plan().size(), 3u);
  EXPECT_EQ(q.plan()[0].recipe->recipe, Recipe::mxfp8);  // layers.0.bias matches the second
  EXPECT_EQ(q.plan()[0].override_index, 1);
  EXPECT_EQ(q.plan()[1].recipe->recipe, Recipe::mxfp8);
  EXPECT_FALSE(q.plan()[2].recipe.has_value());  // the head stays in the half format
  EXPECT_EQ(q.plan()[2].override_index, 0);
  EXPECT_EQ(q.size(), 2u);
  // Attached to the modules: the head has no state.
  const auto linears = nn::linear_layers(m);
  EXPECT_NE(linears[0].second->quant, nullptr);
  EXPECT_EQ(linears[2].second->quant, nullptr);
  const std::vector<std::string> lines = q.describe_plan();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("mxfp8 (input float8_e4m3, weight float8_e4m3, grad float8_e4m3; "
                           "E8M0 scales per 32, rceil): 2 layers (layers.0, layers.1)",
                           0),
            0u)
      << lines[0];
  EXPECT_EQ(lines[1], "none (the policy's half format): 1 layer (layers.2)");
}

TEST(QuantizedLayers, APatternThatMatchesNoParameterIsAnError) {
  nn::Mlp m = mlp();
  EXPECT_EQ(error_of([&] {
              QuantizedLayers(m, recipe(Recipe::mxfp8, {{"head.*", std::nullopt}}), 0);
            }),
            "recipe.layers[0].match: 'head.*' matches no parameter (the model's parameters: "
            "layers.0.weight, layers.0.bias, layers.1.weight, layers.1.bias, layers.2.weight, "
            "layers.2.bias)");
}

TEST(QuantizedLayers, ABlockSizeThatDoesNotDivideIsAnErrorUnlessPadded) {
  nn::Mlp m = mlp(40);
  EXPECT_EQ(error_of([&] { QuantizedLayers(m, recipe(Recipe::mxfp8), 0); })
                .rfind("recipe.block_size: 32 (the mxfp8 default) do not divide layers.0's "
                       "in_features 40",
                       0),
            0u);
  auto given = recipe(Recipe::mxfp4);
  given.block_size = 16;
  nn::Mlp m48 = mlp(48);
  given.block_size = 24;
  EXPECT_EQ(error_of([&] {
              QuantizedLayers(m48, given, 0);
            }).rfind("recipe.block_size: 24 do not divide layers.0's out_features 64", 0),
            0u);
  EXPECT_EQ(
      error_of([&] {
        QuantizedLayers(m, recipe(Recipe::nvfp4), 0);
      }).rfind("recipe.name: nvfp4's blocks of 16 do not divide layers.0's in_features 40", 0),
      0u);
  auto padded = recipe(Recipe::mxfp8);
  padded.pad_blocks = true;
  EXPECT_EQ(QuantizedLayers(m, padded, 0).size(), 3u);
  // Overriding the layer that does not divide is the other way out; blockwise pads by
  // default (its 128-wide tiles).
  EXPECT_EQ(QuantizedLayers(m, recipe(Recipe::mxfp8, {{"layers.0.*", std::nullopt}}), 0).size(),
            2u);
  EXPECT_EQ(QuantizedLayers(m, recipe(Recipe::blockwise), 0).size(), 3u);
}

TEST(QuantizedLayers, CheckpointStateRoundTripsAndIsChecked) {
  nn::Mlp m = mlp();
  QuantizedLayers q(m, recipe(Recipe::nvfp4, {{"layers.2.*", Recipe::delayed}}), 3);
  EXPECT_TRUE(q.rounds_stochastically());
  const auto state = q.state_tensors();
  ASSERT_EQ(state.count("hadamard_signs"), 1u);
  EXPECT_EQ(state.at("hadamard_signs").to_vector(),
            (std::vector<float>{1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1}));
  EXPECT_EQ(state.count("layers.2.amax_history"), 1u);
  EXPECT_EQ(state.count("layers.0.amax_history"), 0u);
  q.set_stochastic_position(12345);
  EXPECT_EQ(q.stochastic_position(), 12345u);
  nn::Mlp m2 = mlp();
  QuantizedLayers fresh(m2, recipe(Recipe::nvfp4, {{"layers.2.*", Recipe::delayed}}), 3);
  fresh.load_state_tensors(state);
  auto flipped = state;
  flipped["hadamard_signs"] =
      tensor::Tensor::from_vector({1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1}, {16});
  EXPECT_NE(error_of([&] {
              fresh.load_state_tensors(flipped);
            }).find("fp8.hadamard_signs: the checkpoint's rotation signs differ"),
            std::string::npos);
  auto missing = state;
  missing.erase("hadamard_signs");
  EXPECT_NE(error_of([&] {
              fresh.load_state_tensors(missing);
            }).find("fp8.hadamard_signs: not in the checkpoint"),
            std::string::npos);
  // Without rotation there are no signs to keep.
  auto plain = recipe(Recipe::nvfp4);
  plain.hadamard = false;
  nn::Mlp m3 = mlp();
  EXPECT_EQ(QuantizedLayers(m3, plain, 0).state_tensors().count("hadamard_signs"), 0u);
}

TEST(QuantizedLayers, TheOlderFp8SpellingIsTheDelayedRecipe) {
  nn::Mlp m = mlp();
  precision::Fp8Settings f;
  f.enabled = true;
  f.history_length = 4;
  const Fp8Layers q(m, f);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.plan()[0].recipe->recipe, Recipe::delayed);
  EXPECT_EQ(q.plan()[0].recipe->formats[2], numerics::Format::float8_e5m2);  // hybrid
  EXPECT_EQ(q.state_tensors().at("layers.0.amax_history").shape(), (tensor::Shape{3, 4}));
  f.enabled = false;
  nn::Mlp m2 = mlp();
  EXPECT_TRUE(Fp8Layers(m2, f).empty());
}

}  // namespace
}  // namespace mantissa::amp
