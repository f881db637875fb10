#pragma once
// Quantized linear layers for any training loop (the Trainer's, or a hand-written one:
// examples/fp8_loop.cpp, examples/block_scaled_loop.cpp): a recipe (precision/recipe.hpp)
// attached to every nn::Linear of a module, per-layer overrides by parameter-name pattern,
// the delayed recipe's scaling states updated after every optimizer step, their overflow and
// underflow counts summed over a window, and the state a checkpoint holds:
//   "<layer>.amax_history" [3, H] and "<layer>.scale" [3] per delayed layer (slots in the
//     order input, weight, grad);
//   "hadamard_signs" [16] when an nvfp4 layer rotates (checked on load: a resumed run
//     rotates with the signs it started with);
//   the stochastic-rounding stream's position (stochastic_position(), an integer the
//     Trainer keeps in the checkpoint's metadata).
// The Trainer stores the tensors under kFp8Prefix. The products take their recipe while the
// current precision::Policy has fp8 enabled (the switch for every recipe).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/nn/module.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/recipe.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::amp {

inline constexpr std::string_view kFp8Prefix = "fp8.";

// What one Linear runs: its recipe (nullopt: none, the policy's half format) and the
// override that chose it (-1: the run's recipe).
struct LayerPlan {
  std::string layer;  // module name, e.g. "blocks.0.attn.qkv"
  std::optional<precision::LayerRecipe> recipe;
  int override_index = -1;
};

class QuantizedLayers {
 public:
  QuantizedLayers() = default;
  // The delayed recipe with `settings` on every Linear under `root` (nothing when disabled).
  QuantizedLayers(nn::Module& root, const precision::Fp8Settings& settings);
  // `settings`' recipe on every Linear under `root`, overrides applied; stochastic rounding
  // seeded by `seed`. Throws mantissa::Error, before any product, naming
  // "recipe.layers[i].match" for a pattern that matches no parameter of the model and
  // "recipe.block_size" (or "recipe.name" for nvfp4's fixed 16) for a block size that does
  // not divide a quantized layer's in_features and out_features (unless pad_blocks).
  QuantizedLayers(nn::Module& root, const precision::RecipeSettings& settings, std::uint64_t seed);

  bool empty() const { return quantized_ == 0; }
  std::size_t size() const { return quantized_; }  // the layers that run a recipe
  const std::vector<LayerPlan>& plan() const { return plan_; }
  // One line per distinct choice: "mxfp4 (...): 18 layers" / "none (the half format):
  // head, blocks.0.attn.qkv (recipe.layers[0] 'head.*')".
  std::vector<std::string> describe_plan() const;

  // Data parallel: replaces this process's step figures, every delayed layer's in order (amax
  // and counts per slot, layers x 3), by the job's: the max of every process's amax (a
  // non-finite one anywhere makes it non-finite) and the sum of their counts.
  using Agreement =
      std::function<void(std::vector<float>& amax, std::vector<std::int64_t>& counts)>;

  // After an optimizer step (taken or skipped): the histories and scales move on, and the
  // step's counts join the window's. With `agree`, the step's figures are the job's first.
  void update(const Agreement& agree = {});

  // The window since the last take_window(): its totals and the slots ("<layer>.<slot>",
  // e.g. "blocks.0.attn.qkv.grad") with any overflow or underflow, in layer order; resets it.
  precision::Fp8WindowCounts take_window();
  // Every slot's counts over the whole run so far.
  std::int64_t total_overflows() const { return total_overflows_; }
  std::int64_t total_underflows() const { return total_underflows_; }

  // Checkpoint state, names without kFp8Prefix.
  std::map<std::string, tensor::Tensor> state_tensors() const;
  // Throws mantissa::Error naming the layer whose state is missing or does not fit, or the
  // rotation signs when they differ from this build's.
  void load_state_tensors(const std::map<std::string, tensor::Tensor>& state);
  // The stochastic-rounding stream's position (0 when no layer rounds stochastically).
  std::uint64_t stochastic_position() const { return stream_ ? stream_->position() : 0; }
  void set_stochastic_position(std::uint64_t p);
  bool rounds_stochastically() const;

 private:
  void attach(nn::Module& root, const precision::RecipeSettings& settings, std::uint64_t seed);
  std::vector<LayerPlan> plan_;
  std::size_t quantized_ = 0;
  std::vector<std::pair<std::string, std::shared_ptr<precision::Fp8Meta>>> delayed_;
  std::shared_ptr<precision::StochasticStream> stream_;
  std::vector<precision::Fp8Meta::Counts> window_;  // per delayed layer x slot
  std::int64_t total_overflows_ = 0, total_underflows_ = 0;
};

// The older name: fp8 linear layers with delayed scaling are one recipe of QuantizedLayers.
using Fp8Layers = QuantizedLayers;

}  // namespace mantissa::amp
