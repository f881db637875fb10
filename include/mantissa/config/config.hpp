#pragma once
// The trainer's YAML configuration, in the vendor's layout:
//   trainer.init.{seed, model, optimizer, schedulers, precision, loop, checkpoint, logging,
//                 dist}
//   trainer.fit.{train_dataloader, val_dataloader}
// Every key is checked: unknown keys, wrong types and bad values throw mantissa::Error naming
// the key path, the value and what is allowed, before any work. docs/config.md lists them.
// This is where the config's words (model and dataset names, fp16_type, optimizer names,
// ...) become typed values, once; nothing below reads a name.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/dist/reduction.hpp"
#include "mantissa/names.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/optimizer_settings.hpp"
#include "mantissa/optim/schedule.hpp"

namespace mantissa::config {

enum class ModelKind { gpt, mlp, cnn };
inline constexpr NameTable<ModelKind, 3> kModelNames = {
    {{"gpt", ModelKind::gpt}, {"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}}};
static_assert(in_enum_order(kModelNames, static_cast<std::size_t>(ModelKind::cnn) + 1));

struct ModelConfig {
  ModelKind kind = ModelKind::gpt;
  nn::GptConfig gpt;
  nn::MlpConfig mlp;
  nn::CnnConfig cnn;  // channels, height and width come from the dataset
};

// One entry of the optimizer's `params` list: the parameters whose names match one of
// `globs` (fnmatch patterns over the whole name) get `tag`, the fields this entry sets
// (`fields`, with their values in `settings`) and adjust_learning_rate.
struct ParamGroupConfig {
  std::vector<std::string> globs;
  std::string tag;
  optim::OptimizerSettings settings;  // the optimizer's settings with this entry's fields
  std::set<std::string> fields;       // the names of the fields it sets
  std::optional<double> adjust_learning_rate;
};

struct OptimizerConfig {
  optim::OptimizerSettings settings;  // from the key: AdamW, adamw, ... (case-insensitive)
  double learning_rate = 1e-3;        // `learning_rate` or `lr`; default: the optimizer's
  bool learning_rate_given = false;
  std::vector<ParamGroupConfig> params;
  // `state_dtype`: the format of the moment buffers (optim/training_state.hpp).
  numerics::Format state_format = numerics::Format::float32;
};

// What a scheduler drives (the vendor's param_group_key): *LR classes the learning rate,
// *WD classes the weight decay.
enum class ScheduledKey { learning_rate, weight_decay };
inline constexpr NameTable<ScheduledKey, 2> kScheduledKeyNames = {
    {{"lr", ScheduledKey::learning_rate}, {"weight_decay", ScheduledKey::weight_decay}}};
static_assert(in_enum_order(kScheduledKeyNames,
                            static_cast<std::size_t>(ScheduledKey::weight_decay) + 1));

struct SchedulerConfig {
  ScheduledKey key = ScheduledKey::learning_rate;
  optim::SchedulePtr schedule;
  // param_group_tags: the groups it drives (a group drives when it has one of the tags; ""
  // stands for the vendor's null, the untagged groups); unset: every group.
  std::optional<std::set<std::string>> tags;
  bool scale_per_param = false;  // ScalePerParamLR / ScalePerParamWD
  std::string where;             // "trainer.init.schedulers[i] (Name)", for messages
};

// eval_frequency: every `steps` steps, or every ceil(fraction * max_steps) steps; validation
// also runs at the end. NoEval (0 or null): no validation in train_and_eval.
struct EvalEvery {
  std::int64_t steps = 1;
};
struct EvalFraction {
  double fraction = 1.0;
};
struct NoEval {};
using EvalFrequency = std::variant<EvalEvery, EvalFraction, NoEval>;

struct LoopConfig {
  std::int64_t max_steps = 100;
  EvalFrequency eval_frequency = EvalFraction{1.0};  // the vendor's default: at the end
  std::int64_t eval_steps = 10;
  std::int64_t grad_accum_steps = 1;
  // Steps between validations in train_and_eval (0: none).
  std::int64_t eval_interval() const;
};

struct CheckpointConfig {
  std::int64_t steps = 0;  // 0: only at the end
  std::int64_t keep = 3;
  std::string dir;  // default: runs/<config name>
};

struct LoggingConfig {
  std::int64_t log_steps = 10;
  // "Which layer loses what" (docs/mixed_precision.md): every this many steps, and on step 1,
  // what each rounding to H, fp8 or a block format lost, per layer and role, as a
  // precision_stats record of metrics.jsonl. 0 (the default): never.
  std::int64_t precision_stats_steps = 0;
  // Name where a skipped step's backward first went non-finite (autograd/nonfinite_watch.hpp):
  // every gradient an op makes is checked for inf and NaN as it is made (about 1% of a
  // step, docs/PERFORMANCE.md). false: skipped steps name only the parameters.
  bool attribute_overflows = true;
  bool samples_precision(std::int64_t step) const {
    return precision_stats_steps > 0 && (step == 1 || step % precision_stats_steps == 0);
  }
};

// trainer.init.dist: data-parallel training under mpirun (docs/distributed.md); unused in a
// run of one process.
struct DistConfig {
  dist::WireFormat allreduce_dtype = dist::WireFormat::float32;  // the gradients on the wire
  double bucket_cap_mb = 25;    // MiB of float32 gradient per bucket, in (0, 65536]
  double timeout_seconds = 30;  // the longest wait for a silent peer, in (0, 86400]
  bool overlap = true;          // buckets start during the backward (false: all after it)
  std::int64_t bucket_cap_bytes() const;
};

enum class DatasetKind { kjv, text, fashion_mnist };
inline constexpr NameTable<DatasetKind, 3> kDatasetNames = {
    {{"kjv", DatasetKind::kjv},
     {"text", DatasetKind::text},
     {"fashion_mnist", DatasetKind::fashion_mnist}}};
static_assert(in_enum_order(kDatasetNames,
                            static_cast<std::size_t>(DatasetKind::fashion_mnist) + 1));
// Text datasets split into train and val (the held-out tail); Fashion-MNIST has train and
// test files.
enum class Split { train, val, test };
inline constexpr NameTable<Split, 3> kSplitNames = {
    {{"train", Split::train}, {"val", Split::val}, {"test", Split::test}}};
static_assert(in_enum_order(kSplitNames, static_cast<std::size_t>(Split::test) + 1));

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
  std::vector<SchedulerConfig> schedulers;  // none: constant(optimizer.learning_rate)
  std::string schedule_text;                // a description for logs
  amp::MixedPrecision precision;
  LoopConfig loop;
  CheckpointConfig checkpoint;
  LoggingConfig logging;
  DistConfig dist;
  DataloaderConfig train_data;
  std::optional<DataloaderConfig> val_data;
  std::string yaml;  // the effective YAML (after overrides), stored in checkpoints
  // One line per deprecated spelling read (naming the key to use instead); the Trainer
  // reports them through its events.
  std::vector<std::string> notes;
};

// Parses YAML text; `overrides` are "a.b.c=value" strings applied first (value parsed as
// YAML). `source` names the file in messages.
TrainerConfig parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& source);
TrainerConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

// trainer.init.<key> of a config's effective YAML, on one line in YAML's flow form ("unset"
// when the key is absent): for messages that show two configs' settings side by side.
std::string config_section(const std::string& yaml, const std::string& key);
// `yaml` with trainer.init.<key> taken from `from` for each of `keys` (removed where `from`
// lacks it).
std::string with_sections(const std::string& yaml, const std::string& from,
                          const std::vector<std::string>& keys);

}  // namespace mantissa::config
