#pragma once
// Checkpoints: one safetensors file per save (model.* parameters, optimizer.* state tensors)
// with metadata (format version, global step, optimizer step, scaler state, RNG and loader
// state, the effective config, and a crc32 per tensor). Written atomically: temporary file,
// fsync, rename, fsync of the directory, so a crash leaves the previous checkpoint loadable.
// Loading verifies everything before anything is used: the file's structure, every tensor's
// checksum, every value finite, every metadata field typed and in range.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/data/loaders.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/tensor/random.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::train {

struct Checkpoint {
  std::map<std::string, tensor::Tensor> tensors;
  std::map<std::string, std::string> metadata;
  // false: a mantissa-checkpoint-1 file, written before per-tensor checksums (loaded, but its
  // tensors could not be verified).
  bool checksummed = true;
};

// The metadata a run needs to resume, typed (the strings of Checkpoint::metadata).
struct CheckpointMeta {
  std::int64_t global_step = 0;
  std::int64_t optimizer_step = 0;  // <= global_step (skipped steps do not advance it)
  std::string config;               // the effective YAML of the run that wrote it
  numerics::Format fp16_type = numerics::Format::float32;  // in use (float32: no half format)
  data::LoaderState train_loader;
  tensor::RngState rng;
  std::optional<amp::ScalerState> scaler;
  std::int64_t dist_ranks = 1;  // the processes of the job that wrote it (absent: 1)
  // The matrix-product routes the run had chosen (absent in older checkpoints): a resume
  // takes the same ones, so that it continues bit for bit.
  std::vector<kernels::RouteRecord> routes;
  // The position of the linear layers' stochastic-rounding stream (runs that round
  // gradients stochastically: nvfp4), key "quant_stochastic_position".
  std::optional<std::int64_t> stochastic_position;
};
// The metadata strings for `meta` (a key per field), and back: every field checked (integers
// >= 0, fp16_type a half format or float32, the scaler state in range); mantissa::Error
// "<path>: checkpoint metadata '<key>': <value> (expected ...)".
std::map<std::string, std::string> encode_checkpoint_meta(const CheckpointMeta& meta);
CheckpointMeta decode_checkpoint_meta(const std::map<std::string, std::string>& metadata,
                                      const std::string& path);

// The config stored in a checkpoint's metadata, parsed; an error in it names the file
// ("<path> (its config): <key>: ...").
config::TrainerConfig config_of_checkpoint(const CheckpointMeta& meta, const std::string& path);
// Writes `ckpt` as <dir>/ckpt-<step, 8 digits>.safetensors atomically; returns the path.
std::string save_checkpoint(const std::string& dir, std::int64_t step, const Checkpoint& ckpt);
// Loads and verifies (see above); throws mantissa::Error naming the file and the reason.
Checkpoint load_checkpoint(const std::string& path);
// The step a checkpoint's file name says (ckpt-<step>.safetensors as save_checkpoint names
// it); nullopt for any other name.
std::optional<std::int64_t> step_in_checkpoint_name(const std::string& path);
// Checkpoint files in `dir`, oldest first (temporary files are not checkpoints).
std::vector<std::string> list_checkpoints(const std::string& dir);
// The newest checkpoint in `dir`, if any.
std::optional<std::string> latest_checkpoint(const std::string& dir);
// The newest checkpoint in `dir`, loaded (nullopt: none). It is never skipped: when it does
// not load, the Error names it, says why, and names the newest older one that loads and how
// to take it.
struct LoadedCheckpoint {
  std::string path;
  Checkpoint checkpoint;
};
std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& dir);
// Deletes all but the newest `keep`, and never `protect` (the newest checkpoint known to
// hold finite values: a run whose last checkpoints went non-finite keeps a usable one).
void apply_retention(const std::string& dir, std::int64_t keep, const std::string& protect = "");
// Whether every value of every tensor is finite.
bool all_finite(const std::map<std::string, tensor::Tensor>& tensors);
// Deletes what a save cut short left in `dir` (ckpt-*.safetensors.tmp, never read as a
// checkpoint: a process killed while writing); returns how many files it deleted.
int remove_unfinished_checkpoints(const std::string& dir);
// Throws, naming the entry and what it is, when `dir` holds something other than a regular
// file (a link, a FIFO, a directory) under a name the run writes checkpoints to
// (ckpt-<step>.safetensors and its .tmp): the run would fail at its first save, or hang.
// A link under a checkpoint's own name is allowed (read, never written through).
void check_checkpoint_names_are_files(const std::string& dir);

inline constexpr const char* kCheckpointVersion = "mantissa-checkpoint-2";
inline constexpr const char* kUnchecksummedVersion = "mantissa-checkpoint-1";

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
