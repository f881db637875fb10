#pragma once
// The trainer's YAML configuration, in the seeds' layout:
//   trainer.init.{seed, model, optimizer, schedulers, precision, loop, checkpoint, logging}
//   trainer.fit.{train_dataloader, val_dataloader}
// Every key is checked: unknown keys, wrong types and bad values throw mantissa::Error naming
// the key path, the value and what is allowed, before any work. docs/config.md lists them.
// This is where the config's words (model and dataset names, fp16_type, optimizer names,
// ...) become typed values, once; nothing below reads a name.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/names.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/optimizer_settings.hpp"
#include "mantissa/optim/schedule.hpp"

namespace mantissa::train {

enum class ModelKind { gpt, mlp, cnn };
inline constexpr NameTable<ModelKind, 3> kModelNames = {
    {{"gpt", ModelKind::gpt}, {"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}}};

struct ModelConfig {
  ModelKind kind = ModelKind::gpt;
  nn::GptConfig gpt;
  nn::MlpConfig mlp;
  nn::CnnConfig cnn;  // channels, height and width come from the dataset
};

struct OptimizerConfig {
  optim::OptimizerSettings settings;  // from the key: AdamW, adamw, ... (case-insensitive)
  double learning_rate = 1e-3;
};

struct LoopConfig {
  std::int64_t max_steps = 100;
  std::int64_t eval_frequency = 0;  // 0: evaluate only at the end (train_and_eval)
  std::int64_t eval_steps = 10;
  std::int64_t grad_accum_steps = 1;
};

struct CheckpointConfig {
  std::int64_t steps = 0;  // 0: only at the end
  std::int64_t keep = 3;
  std::string dir;  // default: runs/<config name>
};

struct LoggingConfig {
  std::int64_t log_steps = 10;
};

enum class DatasetKind { kjv, text, fashion_mnist };
inline constexpr NameTable<DatasetKind, 3> kDatasetNames = {
    {{"kjv", DatasetKind::kjv},
     {"text", DatasetKind::text},
     {"fashion_mnist", DatasetKind::fashion_mnist}}};
// Text datasets split into train and val (the held-out tail); Fashion-MNIST has train and
// test files.
enum class Split { train, val, test };
inline constexpr NameTable<Split, 3> kSplitNames = {
    {{"train", Split::train}, {"val", Split::val}, {"test", Split::test}}};

struct DataloaderConfig {
  DatasetKind dataset = DatasetKind::text;
  Split split = Split::train;
  std::int64_t batch_size = 8;
  std::int64_t context = 128;     // text datasets
  std::string path;               // text: the file; fashion_mnist: the directory
  std::string data_dir = "data";  // kjv cache
  double val_fraction = 0.05;     // text datasets: the validation tail
  bool shuffle = true;
};

struct TrainerConfig {
  std::uint64_t seed = 1;
  ModelConfig model;
  OptimizerConfig optimizer;
  optim::SchedulePtr learning_rate;  // from schedulers, or constant(optimizer.learning_rate)
  std::string schedule_text;         // a description for logs
  amp::MixedPrecision precision;
  LoopConfig loop;
  CheckpointConfig checkpoint;
  LoggingConfig logging;
  DataloaderConfig train_data;
  std::optional<DataloaderConfig> val_data;
  std::string yaml;  // the effective YAML (after overrides), stored in checkpoints
};

// Parses YAML text; `overrides` are "a.b.c=value" strings applied first (value parsed as
// YAML). `source` names the file in messages.
TrainerConfig parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& source);
TrainerConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace mantissa::train
