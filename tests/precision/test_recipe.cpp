// precision::RecipeSettings: each recipe's defaults as its definition gives them (formats per
// GEMM role, block sizes, padding, power-of-two scales, nvfp4's rotation and stochastic
// rounding), formats given applying to the run's recipe only, and the descriptions logs and
// run records carry.
#include <gtest/gtest.h>

#include "mantissa/precision/recipe.hpp"

namespace mantissa::precision {
namespace {

using numerics::Format;

LayerRecipe defaults(Recipe r) {
  RecipeSettings s;
  s.recipe = r;
  s.validate();
  return resolve(s, r);
}

TEST(Recipe, DefaultsFollowTheDefinitions) {
  const std::array<Format, 3> e4m3{Format::float8_e4m3, Format::float8_e4m3, Format::float8_e4m3};
  const std::array<Format, 3> fp4{Format::float4_e2m1, Format::float4_e2m1, Format::float4_e2m1};
  EXPECT_EQ(defaults(Recipe::delayed).formats,
            (std::array<Format, 3>{Format::float8_e4m3, Format::float8_e4m3, Format::float8_e5m2}));
  EXPECT_EQ(defaults(Recipe::current).formats, defaults(Recipe::delayed).formats);  // HYBRID
  EXPECT_FALSE(defaults(Recipe::current).power_of_two_scales);
  EXPECT_EQ(defaults(Recipe::blockwise).formats, e4m3);  // DeepSeek-V3: e4m3 everywhere
  EXPECT_EQ(defaults(Recipe::blockwise).block_size, 128);
  EXPECT_TRUE(defaults(Recipe::blockwise).power_of_two_scales);  // TE's Float8BlockScaling
  EXPECT_TRUE(defaults(Recipe::blockwise).pad_blocks);
  EXPECT_EQ(defaults(Recipe::mxfp8).formats, e4m3);
  EXPECT_EQ(defaults(Recipe::mxfp6).formats,
            (std::array<Format, 3>{Format::float6_e2m3, Format::float6_e2m3, Format::float6_e3m2}));
  EXPECT_EQ(defaults(Recipe::mxfp4).formats, fp4);
  for (Recipe mx : {Recipe::mxfp8, Recipe::mxfp6, Recipe::mxfp4}) {
    EXPECT_EQ(defaults(mx).block_size, 32);
    EXPECT_EQ(defaults(mx).scale_rule, numerics::MxScaleRule::rceil);
    EXPECT_FALSE(defaults(mx).pad_blocks);
  }
  const LayerRecipe nv = defaults(Recipe::nvfp4);
  EXPECT_EQ(nv.formats, fp4);
  EXPECT_EQ(nv.block_size, 16);
  EXPECT_TRUE(nv.hadamard);
  EXPECT_TRUE(nv.stochastic_rounding);
  EXPECT_EQ(defaults(Recipe::delayed).fp8.history_length, 1024);
}

TEST(Recipe, GivenFormatsApplyToTheRunsRecipeOnly) {
  RecipeSettings s;
  s.recipe = Recipe::mxfp4;
  s.formats[2] = Format::float8_e5m2;
  s.layers = {{"head*", Recipe::mxfp8}};
  s.validate();
  EXPECT_EQ(resolve(s, Recipe::mxfp4).formats[2], Format::float8_e5m2);
  EXPECT_EQ(resolve(s, Recipe::mxfp4).formats[0], Format::float4_e2m1);
  EXPECT_EQ(resolve(s, Recipe::mxfp8).formats[2], Format::float8_e4m3);
}

TEST(Recipe, TheFp8SettingsAreTheDelayedRecipe) {
  Fp8Settings f;
  f.recipe = Fp8Recipe::e4m3;
  f.history_length = 16;
  f.amax_compute = AmaxCompute::most_recent;
  f.margin = 2;
  const LayerRecipe r = resolve(delayed_recipe(f), Recipe::delayed);
  EXPECT_EQ(r.formats[2], Format::float8_e4m3);
  EXPECT_EQ(r.fp8.history_length, 16);
  EXPECT_EQ(r.fp8.amax_compute, AmaxCompute::most_recent);
  EXPECT_EQ(r.fp8.margin, 2);
  LinearQuant q(r, nullptr);
  ASSERT_NE(q.delayed(), nullptr);
  EXPECT_EQ(q.delayed()->format(Fp8Slot::grad), Format::float8_e4m3);
}

TEST(Recipe, Descriptions) {
  EXPECT_EQ(defaults(Recipe::mxfp4).describe(),
            "mxfp4 (input float4_e2m1, weight float4_e2m1, grad float4_e2m1; E8M0 scales per 32, "
            "rceil)");
  EXPECT_EQ(defaults(Recipe::nvfp4).describe(),
            "nvfp4 (input float4_e2m1, weight float4_e2m1, grad float4_e2m1; e4m3 scales per "
            "1x16 (weights 16x16) and a float32 tensor scale, hadamard on, stochastic rounding "
            "on)");
  EXPECT_EQ(defaults(Recipe::blockwise).describe(),
            "blockwise (input float8_e4m3, weight float8_e4m3, grad float8_e4m3; float32 scales "
            "per 1x128 tile and 128x128 weight block, powers of two, padded blocks)");
}

TEST(Recipe, TheStochasticStreamHandsOutPositions) {
  StochasticStream s(9);
  EXPECT_EQ(s.take(100), 0u);
  EXPECT_EQ(s.take(5), 100u);
  EXPECT_EQ(s.position(), 105u);
  EXPECT_EQ(s.seed(), 9u);
}

}  // namespace
}  // namespace mantissa::precision
