// N steps straight vs N/2, checkpoint, a fresh trainer resuming, N/2 more: bitwise identical
// parameters, optimizer state, scaler state and loader position (hence next batch), for a
// float16 run with dynamic loss scaling that skips steps; the same for fp8 linear layers and
// for bfloat16 master weights (issue 17), and for the block-scaled recipes (issue 26).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;
using config::parse_config;
using config::TrainerConfig;

std::string config_yaml(const std::string& text_path, const std::string& dir, int steps) {
  return R"(
trainer:
  init:
    seed: 5
    model: {name: gpt, vocab_size: 256, max_position_embeddings: 16, hidden_size: 32,
            num_hidden_layers: 2, num_heads: 2, filter_size: 64, dropout_rate: 0.1}
    optimizer: {AdamW: {learning_rate: 3.0e-3}}
    schedulers:
      - CosineDecayLR: {initial_learning_rate: 3.0e-3, end_learning_rate: 0.0, total_iters: 40}
    precision: {fp16_type: float16, loss_scaling_factor: dynamic, initial_loss_scale: 1.0e9,
                max_loss_scale: 1.0e9, steps_per_increase: 3, max_gradient_norm: 1.0}
    loop: {max_steps: )" +
         std::to_string(steps) + R"(, grad_accum_steps: 2}
    checkpoint: {dir: )" +
         dir + R"(, keep: 5}
    logging: {log_steps: 100}
  fit:
    train_dataloader: {dataset: text, path: )" +
         text_path + R"(, batch_size: 2, context: 16}
)";
}

std::vector<std::uint32_t> bits(const tensor::Tensor& t) {
  const std::vector<float> v = t.to_vector();
  std::vector<std::uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Runs 12 steps straight and 6 + 6 resumed with `overrides`; returns both trainers' states.
struct ResumePair {
  std::map<std::string, tensor::Tensor> straight, resumed;
  std::map<std::string, std::string> straight_meta, resumed_meta;
  std::int64_t skipped = 0;
};

ResumePair run_pair(const std::string& name, const std::vector<std::string>& overrides) {
  const fs::path dir =
      fs::temp_directory_path() / ("mantissa_resume_" + name + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text = (dir / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 400; ++i)
      out << "line " << i << ": the quick brown fox jumps over the lazy dog\n";
  }
  ResumePair r;
  Trainer straight(parse_config(config_yaml(text, (dir / "a").string(), 12), overrides, "a"));
  r.skipped = straight.run(RunMode::train).skipped_steps;
  Trainer first(parse_config(config_yaml(text, (dir / "b").string(), 6), overrides, "b"));
  first.run(RunMode::train);
  Trainer second(parse_config(config_yaml(text, (dir / "b").string(), 12), overrides, "b"));
  const RunSummary sb = second.run(RunMode::train, ResumeFrom::latest());
  EXPECT_EQ(sb.global_step, 12);
  r.straight = straight.state_tensors();
  r.resumed = second.state_tensors();
  r.straight_meta = straight.state_metadata();
  r.resumed_meta = second.state_metadata();
  fs::remove_all(dir);
  return r;
}

void expect_identical(const ResumePair& r) {
  ASSERT_EQ(r.straight.size(), r.resumed.size());
  for (const auto& [name, t] : r.straight) {
    ASSERT_EQ(r.resumed.count(name), 1u) << name;
    EXPECT_EQ(t.format(), r.resumed.at(name).format()) << name;
    EXPECT_EQ(bits(t), bits(r.resumed.at(name))) << name;
  }
  for (const char* key : {"global_step", "optimizer_step", "scaler", "train_loader", "rng",
                          "quant_stochastic_position"}) {
    ASSERT_EQ(r.straight_meta.count(key), r.resumed_meta.count(key)) << key;
    if (r.straight_meta.count(key) != 0) {
      EXPECT_EQ(r.straight_meta.at(key), r.resumed_meta.at(key)) << key;
    }
  }
}

// A resumed run takes the matrix-product routes its checkpoint recorded, not new
// measurements: with this process's choices forgotten (and no machine cache), every route of
// the checkpoint comes back pinned, on the same route.
TEST(Resume, TakesTheCheckpointsRoutes) {
  kernels::set_route_cache_path("");
  const fs::path dir =
      fs::temp_directory_path() / ("mantissa_resume_routes" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text = (dir / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 400; ++i) out << "line " << i << ": the quick brown fox\n";
  }
  Trainer first(parse_config(config_yaml(text, (dir / "b").string(), 4), {}, "b"));
  first.run(RunMode::train);
  const std::vector<kernels::RouteRecord> recorded = kernels::route_records();
  ASSERT_FALSE(recorded.empty());
  kernels::clear_routes();
  Trainer second(parse_config(config_yaml(text, (dir / "b").string(), 6), {}, "b"));
  second.run(RunMode::train, ResumeFrom::latest());
  std::map<kernels::GemmKey, kernels::RouteRecord> now;
  for (const kernels::RouteRecord& r : kernels::route_records()) now[r.key] = r;
  for (const kernels::RouteRecord& r : recorded) {
    ASSERT_EQ(now.count(r.key), 1u) << kernels::describe(r.key);
    EXPECT_EQ(now[r.key].source, kernels::RouteSource::pinned) << kernels::describe(r.key);
    EXPECT_EQ(now[r.key].route, r.route) << kernels::describe(r.key);
  }
  kernels::set_route_cache_path("");
  fs::remove_all(dir);
}

TEST(Resume, HalfPlusHalfEqualsStraightBitForBit) {
  const ResumePair r = run_pair("f16", {});
  EXPECT_GT(r.skipped, 0) << "the run must skip steps (float16 overflow at scale 1e9)";
  expect_identical(r);
}

// fp8 linear layers: the amax histories and scales are checkpointed and restored, so the
// resumed run casts with the same scales.
TEST(Resume, Fp8ScalingStateResumesBitForBit) {
  // bfloat16 around the fp8 products (float16 at this test's 1e9 loss scale would overflow
  // every gradient, and an overflowing step records no amax).
  const ResumePair r = run_pair("fp8", {"trainer.init.precision.fp16_type=bfloat16",
                                        "trainer.init.precision.fp8.enabled=true",
                                        "trainer.init.precision.fp8.history_length=4"});
  expect_identical(r);
  int layers = 0;
  for (const auto& [name, t] : r.straight) {
    if (name.rfind("fp8.", 0) != 0 || name.find(".amax_history") == std::string::npos) continue;
    ++layers;
    ASSERT_EQ(t.shape(), (tensor::Shape{3, 4})) << name;
    // After 12 steps every slot has a nonzero amax in its window of 4: the inputs, weights
    // and output gradients are never all zero.
    const std::vector<float> h = t.to_vector();
    for (int slot = 0; slot < 3; ++slot) {
      float m = 0;
      for (int i = 0; i < 4; ++i) m = std::max(m, h[static_cast<std::size_t>(slot * 4 + i)]);
      EXPECT_GT(m, 0.0f) << name << " slot " << slot;
    }
  }
  // 2 blocks x (qkv, attention out, fc1, fc2) + the head.
  EXPECT_GE(layers, 8);
}

// The block-scaled and current-scaled recipes (issue 26): nvfp4's stochastic-rounding stream
// position and rotation signs are checkpointed, so the resumed run rounds its gradients with
// the same random bits; the just-in-time recipes resume from the weights alone.
TEST(Resume, RecipesResumeBitForBit) {
  const std::string p = "trainer.init.precision.";
  const std::vector<std::vector<std::string>> runs = {
      {p + "recipe={name: nvfp4}"},
      {p + "recipe={name: mxfp4, scale_rule: floor, layers: [{match: head.*, recipe: mxfp8}]}"},
      {p + "recipe={name: blockwise, block_size: 16, power_of_two_scales: false}"},
      {p + "recipe={name: current}"},
  };
  for (const std::vector<std::string>& recipe : runs) {
    SCOPED_TRACE(recipe[0]);
    std::vector<std::string> overrides = {p + "fp16_type=bfloat16"};
    overrides.insert(overrides.end(), recipe.begin(), recipe.end());
    const ResumePair r = run_pair("recipe", overrides);
    expect_identical(r);
    if (recipe[0].find("nvfp4") != std::string::npos) {
      ASSERT_EQ(r.resumed_meta.count("quant_stochastic_position"), 1u);
      EXPECT_NE(r.resumed_meta.at("quant_stochastic_position"), "0");
      EXPECT_EQ(r.resumed.count("fp8.hadamard_signs"), 1u);
    } else {
      EXPECT_EQ(r.resumed_meta.count("quant_stochastic_position"), 0u);
    }
  }
}

// bfloat16 parameters without a float32 copy: the stochastic-rounding stream and the Kahan
// compensation resume where they were; the parameters are stored as bfloat16.
TEST(Resume, Bfloat16MasterWeightsResumeBitForBit) {
  for (const char* master : {"bfloat16_stochastic", "bfloat16_kahan"}) {
    SCOPED_TRACE(master);
    const ResumePair r =
        run_pair(master, {"trainer.init.precision.fp16_type=bfloat16",
                          std::string("trainer.init.precision.master_weights=") + master,
                          "trainer.init.optimizer.AdamW.state_dtype=bfloat16"});
    expect_identical(r);
    int bf16_params = 0, bf16_moments = 0, kahan = 0;
    for (const auto& [name, t] : r.straight) {
      if (name.rfind("model.", 0) == 0) {
        bf16_params += t.format() == numerics::Format::bfloat16;
      } else if (name.find("kahan_compensation") != std::string::npos) {
        ++kahan;
      } else if (name.rfind("optimizer.", 0) == 0) {
        bf16_moments += t.format() == numerics::Format::bfloat16;
      }
    }
    EXPECT_GT(bf16_params, 0);
    EXPECT_GT(bf16_moments, 0);
    EXPECT_EQ(kahan > 0, std::string(master) == "bfloat16_kahan");
  }
}

}  // namespace
}  // namespace mantissa::train
