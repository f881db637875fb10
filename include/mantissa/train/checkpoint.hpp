#pragma once
// Checkpoints: one safetensors file per save (model.* parameters, optimizer.* state tensors)
// with metadata (format version, global step, optimizer step, scaler state, RNG and loader
// state, the effective config). Written atomically: temporary file, fsync, rename, fsync of
// the directory, so a crash leaves the previous checkpoint loadable. Retention keeps the
// newest `keep` files.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/tensor/tensor.hpp"

namespace mantissa::train {

struct Checkpoint {
  std::map<std::string, tensor::Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Writes `ckpt` as <dir>/ckpt-<step, 8 digits>.safetensors atomically; returns the path.
std::string save_checkpoint(const std::string& dir, std::int64_t step, const Checkpoint& ckpt);
// Loads and validates (safetensors structure, and the metadata keys the trainer needs);
// throws mantissa::Error naming the file and the reason.
Checkpoint load_checkpoint(const std::string& path);
// Checkpoint files in `dir`, oldest first (temporary files are not checkpoints).
std::vector<std::string> list_checkpoints(const std::string& dir);
// The newest checkpoint in `dir`, if any.
std::optional<std::string> latest_checkpoint(const std::string& dir);
// Deletes all but the newest `keep`.
void apply_retention(const std::string& dir, std::int64_t keep);
// Deletes what a save cut short left in `dir` (ckpt-*.safetensors.tmp, never read as a
// checkpoint: a process killed while writing); returns how many files it deleted.
int remove_unfinished_checkpoints(const std::string& dir);

inline constexpr const char* kCheckpointVersion = "mantissa-checkpoint-1";

// Tensor names in a checkpoint: "model.<parameter>" and "optimizer.<parameter>.<state>".
inline constexpr std::string_view kModelPrefix = "model.";
inline constexpr std::string_view kOptimizerPrefix = "optimizer.";
// `tensors` with `prefix` put before every name.
std::map<std::string, tensor::Tensor> with_prefix(
    std::string_view prefix, const std::map<std::string, tensor::Tensor>& tensors);
// The tensors whose names start with `prefix`, under their names without it.
std::map<std::string, tensor::Tensor> under_prefix(
    std::string_view prefix, const std::map<std::string, tensor::Tensor>& tensors);

}  // namespace mantissa::train
