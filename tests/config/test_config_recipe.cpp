// precision.recipe (on config_base.hpp's float16 MLP): the recipe block parsed into typed settings,
// the older fp8 spelling beside it, and every bad setting refused before any work with its key
// path.
#include <gtest/gtest.h>

#include "config_base.hpp"

namespace mantissa::config {
namespace {

TEST(ConfigRecipe, ParsesEverySetting) {
  const TrainerConfig c = parse_config(
      kBase,
      {"trainer.init.precision.recipe={name: mxfp4, grad: float8_e5m2, scale_rule: even, "
       "block_size: 16, pad_blocks: true, layers: [{match: 'layers.0.*', recipe: none}, "
       "{match: head.weight, recipe: mxfp8}]}"},
      "test.yaml");
  ASSERT_TRUE(c.precision.recipe.has_value());
  const precision::RecipeSettings& r = *c.precision.recipe;
  EXPECT_EQ(r.recipe, precision::Recipe::mxfp4);
  EXPECT_FALSE(r.formats[0].has_value());
  EXPECT_EQ(r.formats[2], numerics::Format::float8_e5m2);
  EXPECT_EQ(r.scale_rule, numerics::MxScaleRule::even);
  EXPECT_EQ(r.block_size, 16);
  EXPECT_EQ(r.pad_blocks, true);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[0].match, "layers.0.*");
  EXPECT_FALSE(r.layers[0].recipe.has_value());
  EXPECT_EQ(r.layers[1].recipe, precision::Recipe::mxfp8);
  EXPECT_TRUE(c.precision.policy().fp8.enabled);  // the switch the quantized layers read
  EXPECT_EQ(c.precision.linear_recipe(), c.precision.recipe);

  const TrainerConfig n = parse_config(
      kBase,
      {"trainer.init.precision.recipe={name: nvfp4, hadamard: false, stochastic_rounding: false}"},
      "test.yaml");
  EXPECT_EQ(n.precision.recipe->hadamard, false);
  EXPECT_EQ(n.precision.recipe->stochastic_rounding, false);
  const TrainerConfig d = parse_config(
      kBase, {"trainer.init.precision.recipe={name: delayed, history_length: 8, margin: 2}"},
      "test.yaml");
  EXPECT_EQ(d.precision.recipe->history_length, 8);
  EXPECT_EQ(d.precision.recipe->margin, 2);
}

TEST(ConfigRecipe, TheFp8BlockIsTheDelayedRecipe) {
  const TrainerConfig c = parse_config(
      kBase, {"trainer.init.precision.fp8={enabled: true, recipe: e4m3, history_length: 16}"},
      "test.yaml");
  const std::optional<precision::RecipeSettings> r = c.precision.linear_recipe();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->recipe, precision::Recipe::delayed);
  EXPECT_EQ(r->history_length, 16);
  EXPECT_EQ(r->fp8_formats, precision::Fp8Recipe::e4m3);
  EXPECT_FALSE(parse_config(kBase, {}, "test.yaml").precision.linear_recipe().has_value());
}

TEST(ConfigRecipe, BadSettingsNameTheirKey) {
  const std::string p = "trainer.init.precision.";
  expect_error({p + "recipe.name=mxfp5"},
               p + "recipe.name: 'mxfp5' (expected one of: delayed, current, blockwise, mxfp8, "
                   "mxfp6, mxfp4, nvfp4)");
  expect_error({p + "recipe={block_size: 32}"}, p + "recipe.name: missing");
  expect_error({p + "recipe={name: mxfp8, blocksize: 32}"}, p + "recipe.blocksize: unknown key");
  expect_error({p + "recipe={name: mxfp8, input: float7}"}, p + "recipe.input: 'float7'");
  expect_error({p + "recipe={name: blockwise, weight: float4_e2m1}"},
               p + "recipe.weight: float4_e2m1 (the blockwise recipe takes float8_e4m3, "
                   "float8_e5m2)");
  expect_error({p + "recipe={name: nvfp4, grad: float8_e5m2}"},
               p + "recipe.grad: float8_e5m2 (the nvfp4 recipe takes float4_e2m1)");
  expect_error({p + "recipe={name: nvfp4, scale_rule: rceil}"},
               p + "recipe.scale_rule: a rule for E8M0 block scales, which only the MX recipes "
                   "have (it applies to mxfp8, mxfp6, mxfp4; this run uses nvfp4)");
  expect_error({p + "recipe={name: current, scale_rule: floor}"}, p + "recipe.scale_rule:");
  expect_error({p + "recipe={name: mxfp4, scale_rule: round}"},
               p + "recipe.scale_rule: 'round' (expected one of: floor, rceil, ceil, even)");
  expect_error({p + "recipe={name: nvfp4, block_size: 32}"}, p + "recipe.block_size:");
  expect_error({p + "recipe={name: current, block_size: 32}"}, p + "recipe.block_size:");
  expect_error({p + "recipe={name: mxfp8, block_size: 0}"},
               p + "recipe.block_size: 0 (expected 1 to 4096)");
  expect_error({p + "recipe={name: delayed, pad_blocks: true}"}, p + "recipe.pad_blocks:");
  expect_error({p + "recipe={name: mxfp8, power_of_two_scales: true}"},
               p + "recipe.power_of_two_scales:");
  expect_error({p + "recipe={name: mxfp4, hadamard: true}"},
               p + "recipe.hadamard: nvfp4's rotation");
  expect_error({p + "recipe={name: blockwise, stochastic_rounding: true}"},
               p + "recipe.stochastic_rounding:");
  expect_error({p + "recipe={name: current, history_length: 4}"}, p + "recipe.history_length:");
  expect_error({p + "recipe={name: delayed, history_length: 0}"},
               p + "recipe.history_length: 0 (expected 1 to 65536)");
  expect_error({p + "recipe={name: mxfp4, layers: {match: head}}"},
               p + "recipe.layers: expected a list of {match:");
  expect_error({p + "recipe={name: mxfp4, layers: [{recipe: none}]}"},
               p + "recipe.layers[0].match: missing");
  expect_error({p + "recipe={name: mxfp4, layers: [{match: head, recipe: fp4}]}"},
               p + "recipe.layers[0].recipe: 'fp4' (expected one of: delayed, current");
  expect_error({p + "recipe={name: mxfp4, layers: [{match: head, recipe: none, when: 1}]}"},
               p + "recipe.layers[0].when: unknown key");
  expect_error({p + "fp8.enabled=true", p + "recipe.name=mxfp8"},
               p + "recipe: and fp8.enabled: true both choose the linear layers' recipe");
  expect_error({p + "enabled=false", p + "recipe.name=mxfp8"}, p + "recipe: needs enabled: true");
}

TEST(ConfigRecipe, ASettingAnOverridesRecipeReadsIsAccepted) {
  // nvfp4 reads no scale rule, but the mxfp8 layers of the override do.
  const TrainerConfig c = parse_config(
      kBase,
      {"trainer.init.precision.recipe={name: nvfp4, scale_rule: floor, layers: [{match: head*, "
       "recipe: mxfp8}]}"},
      "test.yaml");
  EXPECT_EQ(c.precision.recipe->scale_rule, numerics::MxScaleRule::floor);
}

}  // namespace
}  // namespace mantissa::config
