#pragma once
// A tiny GPT on a small text file in a temporary directory, and an event recorder: runs of
// the whole trainer that take a fraction of a second.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mantissa/train/trainer.hpp"

namespace mantissa::train {

using config::load_config;
using config::parse_config;
using config::TrainerConfig;

struct Recorder final : TrainerEvents {
  std::vector<std::string> messages;
  std::vector<Progress> progress_seen;
  std::vector<std::int64_t> evaluations;
  void message(const std::string& line) override { messages.push_back(line); }
  void progress(const Progress& p) override { progress_seen.push_back(p); }
  void evaluated(const EvalResult&, std::int64_t step) override { evaluations.push_back(step); }
  bool said(const std::string& fragment) const {
    for (const std::string& m : messages) {
      if (m.find(fragment) != std::string::npos) return true;
    }
    return false;
  }
};

struct TinyRun {
  std::filesystem::path dir;
  explicit TinyRun(const std::string& name = "events")
      : dir(std::filesystem::temp_directory_path() /
            ("mantissa_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / "text.txt");
    for (int i = 0; i < 300; ++i) out << "events go to the program, which draws them\n";
  }
  ~TinyRun() { std::filesystem::remove_all(dir); }
  // 4 steps of a one-layer GPT, logged and evaluated every 2; `overrides` as --set.
  TrainerConfig config(const std::string& dataset = "text",
                       const std::vector<std::string>& overrides = {}) const {
    return parse_config(R"(
trainer:
  init:
    model: {name: gpt, max_position_embeddings: 16, hidden_size: 16, num_hidden_layers: 1,
            num_heads: 2, filter_size: 32}
    optimizer: {AdamW: {learning_rate: 1.0e-3}}
    precision: {fp16_type: bfloat16, loss_scaling_factor: dynamic}
    loop: {max_steps: 4, eval_frequency: 2, eval_steps: 1}
    checkpoint: {dir: )" + (dir / "run").string() +
                            R"(}
    logging: {log_steps: 2}
  fit:
    train_dataloader: {dataset: )" +
                            dataset +
                            // kjv reads its data_dir, text its path (each refuses the other)
                            (dataset == "kjv" ? ", data_dir: " + (dir / "data").string()
                                              : ", path: " + (dir / "text.txt").string()) +
                            R"(, batch_size: 2, context: 16}
)",
                        overrides, "tiny");
  }
  // The metrics records of the run directory, one JSON text per line.
  std::vector<std::string> metrics() const {
    std::vector<std::string> lines;
    std::ifstream in(dir / "run" / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

}  // namespace mantissa::train
