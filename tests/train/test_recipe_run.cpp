// The linear layers' recipe in the trainer (issue 26): the plan printed at start, the run
// record (recipe and per-layer precision) in metrics.jsonl and read back, and bad settings
// that need the model refused before the first step, naming the key.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/trainer.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

TEST(RecipeRun, ThePlanIsPrintedAndRecorded) {
  TinyRun run("recipe_run");
  Recorder events;
  TrainerHooks hooks;
  hooks.events = &events;
  Trainer t(run.config("text", {"trainer.init.precision.recipe={name: nvfp4, layers: [{match: "
                                "'head.*', recipe: none}, {match: 'blocks.0.fc.*', recipe: "
                                "mxfp8}]}",
                                "trainer.init.precision.recipe.pad_blocks=true"}),
            hooks);
  t.run(RunMode::train);
  EXPECT_TRUE(events.said("precision bfloat16, POL 1, nvfp4 linear layers"));
  EXPECT_TRUE(events.said("linear layers: nvfp4 (input float4_e2m1"));
  EXPECT_TRUE(events.said("linear layers: none (the policy's half format): 1 layer (head)"));
  EXPECT_TRUE(events.said("linear layers: mxfp8 (input float8_e4m3"));
  const report::RunLog log = report::read_run_log((run.dir / "run").string());
  EXPECT_EQ(log.run.recipe, "nvfp4");
  EXPECT_FALSE(log.run.fp8);
  std::map<std::string, std::string> layers(log.run.layers.begin(), log.run.layers.end());
  ASSERT_EQ(layers.count("head"), 1u);
  EXPECT_EQ(layers.at("head"), "none");
  EXPECT_EQ(layers.at("blocks.0.attn.qkv").rfind("nvfp4 (", 0), 0u);
  EXPECT_EQ(layers.at("blocks.0.fc").rfind("mxfp8 (", 0), 0u);
}

TEST(RecipeRun, SettingsThatNeedTheModelFailBeforeTheFirstStep) {
  TinyRun run("recipe_errors");
  const auto error_of = [&](const std::vector<std::string>& overrides) {
    try {
      Trainer t(run.config("text", overrides));
      t.run(RunMode::train);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // hidden_size 16: MX blocks of 32 do not divide it.
  EXPECT_EQ(error_of({"trainer.init.precision.recipe.name=mxfp8"})
                .rfind("trainer.init.precision.recipe.block_size: 32 (the mxfp8 default) do not "
                       "divide blocks.0.attn.qkv's in_features 16",
                       0),
            0u);
  EXPECT_EQ(error_of({"trainer.init.precision.recipe={name: nvfp4, layers: [{match: 'blocks.1.*', "
                      "recipe: none}]}"})
                .rfind("trainer.init.precision.recipe.layers[0].match: 'blocks.1.*' matches no "
                       "parameter",
                       0),
            0u);
  EXPECT_TRUE(run.metrics().empty());  // nothing ran
}

}  // namespace
}  // namespace mantissa::train
