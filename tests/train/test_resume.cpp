// N steps straight vs N/2, checkpoint, a fresh trainer resuming, N/2 more: bitwise identical
// parameters, optimizer state, scaler state and loader position (hence next batch), for a
// float16 run with dynamic loss scaling that skips steps.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "mantissa/train/trainer.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;

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

TEST(Resume, HalfPlusHalfEqualsStraightBitForBit) {
  const fs::path dir =
      fs::temp_directory_path() / ("mantissa_resume_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text = (dir / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 400; ++i)
      out << "line " << i << ": the quick brown fox jumps over the lazy dog\n";
  }
  Trainer straight(parse_config(config_yaml(text, (dir / "a").string(), 12), {}, "a"));
  const RunSummary sa = straight.run(RunMode::train);
  EXPECT_GT(sa.skipped_steps, 0) << "the run must skip steps (float16 overflow at scale 1e9)";

  Trainer first(parse_config(config_yaml(text, (dir / "b").string(), 6), {}, "b"));
  first.run(RunMode::train);
  Trainer second(parse_config(config_yaml(text, (dir / "b").string(), 12), {}, "b"));
  const RunSummary sb = second.run(RunMode::train, "latest");
  EXPECT_EQ(sb.global_step, 12);

  const auto ta = straight.state_tensors(), tb = second.state_tensors();
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) EXPECT_EQ(bits(t), bits(tb.at(name))) << name;
  auto ma = straight.state_metadata(), mb = second.state_metadata();
  for (const char* key : {"global_step", "optimizer_step", "scaler", "train_loader", "rng"}) {
    EXPECT_EQ(ma.at(key), mb.at(key)) << key;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mantissa::train
