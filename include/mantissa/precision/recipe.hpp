#pragma once
// Training recipes for the linear layers' products (docs/mixed_precision.md "Recipes"): which
// element format each GEMM operand takes and how its scales are found.
//
//   delayed    per-tensor fp8 scales from an amax history (Transformer Engine's
//              DelayedScaling; precision/fp8.hpp holds its state)
//   current    per-tensor fp8 scales from the tensor's own amax, just in time (TE's
//              Float8CurrentScaling, torchao's tensorwise)
//   blockwise  DeepSeek-V3: e4m3, float32 scales per 1 x 128 tile of activations and
//              gradients and per 128 x 128 block of weights (TE's Float8BlockScaling)
//   mxfp8 / mxfp6 / mxfp4
//              OCP Microscaling: blocks of 32 along the reduction dimension with an E8M0
//              scale; the scale rule is selectable (floor, rceil, ceil, even)
//   nvfp4      e2m1 with an e4m3 scale per 1 x 16 (16 x 16 for weights) and a float32 scale
//              per tensor; the weight-gradient product's operands rotated by the 16-point
//              Hadamard transform and gradients rounded stochastically (both switchable)
//
// The three GEMM roles (precision::Fp8Slot): the forward input x, the weight W, the output
// gradient g. A recipe names the element format of each; settings a recipe does not read are
// errors, never silently ignored. Per-layer overrides pick another recipe (or none: the
// layer's products run in the policy's half format) by parameter-name pattern.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/names.hpp"
#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/fp8.hpp"

namespace mantissa::precision {

enum class Recipe : std::uint8_t { delayed, current, blockwise, mxfp8, mxfp6, mxfp4, nvfp4 };
inline constexpr std::size_t kRecipeCount = static_cast<std::size_t>(Recipe::nvfp4) + 1;
inline constexpr NameTable<Recipe, kRecipeCount> kRecipeNames = {{
    {"delayed", Recipe::delayed},
    {"current", Recipe::current},
    {"blockwise", Recipe::blockwise},
    {"mxfp8", Recipe::mxfp8},
    {"mxfp6", Recipe::mxfp6},
    {"mxfp4", Recipe::mxfp4},
    {"nvfp4", Recipe::nvfp4},
}};
static_assert(in_enum_order(kRecipeNames, kRecipeCount));
// A recipe's short name: `bench train --precision` and `compare --formats` take these, and a
// report labels its runs with them ("fp8" is the delayed recipe, as it always was).
inline constexpr NameTable<Recipe, kRecipeCount> kRecipeShortNames = {{
    {"fp8", Recipe::delayed},
    {"fp8_current", Recipe::current},
    {"fp8_block", Recipe::blockwise},
    {"mxfp8", Recipe::mxfp8},
    {"mxfp6", Recipe::mxfp6},
    {"mxfp4", Recipe::mxfp4},
    {"nvfp4", Recipe::nvfp4},
}};
static_assert(in_enum_order(kRecipeShortNames, kRecipeCount));

// The word a per-layer override uses for "no recipe" (the policy's half format).
inline constexpr std::string_view kNoRecipeWord = "none";

// The recipe families: how scales are found.
bool is_mx(Recipe r);       // mxfp8, mxfp6, mxfp4
bool has_blocks(Recipe r);  // mx, blockwise, nvfp4: block_size / pad_blocks apply
Format default_format(Recipe r, Fp8Slot role, Fp8Recipe fp8_formats);
// The element formats `role` may take under `r` (delayed, current, blockwise: e4m3, e5m2;
// MX: every MX element format; nvfp4: e2m1).
std::vector<Format> allowed_formats(Recipe r);

// One override: layers with a parameter whose name matches `match` ('*' any run of
// characters, '?' one) take `recipe`. The first matching override wins.
struct LayerOverride {
  std::string match;
  std::optional<Recipe> recipe;  // nullopt: none
  bool operator==(const LayerOverride&) const = default;
};

// The settings of precision.recipe, as given (unset optionals take the recipe's defaults).
// Key names in messages are relative to precision ("recipe.block_size").
struct RecipeSettings {
  Recipe recipe = Recipe::delayed;
  std::array<std::optional<Format>, kFp8Slots> formats;  // input, weight, grad
  std::optional<numerics::MxScaleRule> scale_rule;       // MX; default rceil
  std::optional<int> block_size;                         // MX (default 32), blockwise (default 128)
  std::optional<bool> pad_blocks;                        // block recipes; default: blockwise only
  std::optional<bool> power_of_two_scales;  // current (default false), blockwise (true)
  std::optional<bool> hadamard;             // nvfp4; default true
  std::optional<bool> stochastic_rounding;  // nvfp4 gradients; default true
  // delayed: its amax history (defaults as precision/fp8.hpp's Fp8Settings)
  std::optional<int> history_length;
  std::optional<AmaxCompute> amax_compute;
  std::optional<int> margin;
  // The default formats of the per-tensor fp8 recipes (delayed, current): hybrid gives e5m2
  // gradients. Set by precision.fp8's `recipe`, the older spelling of the delayed recipe.
  Fp8Recipe fp8_formats = Fp8Recipe::hybrid;
  std::vector<LayerOverride> layers;

  // Throws mantissa::Error naming "recipe.<key>" for a setting no recipe in use reads, a
  // format the recipe cannot take, or a value out of range.
  void validate() const;
  bool operator==(const RecipeSettings&) const = default;
};

// The delayed recipe with `fp8`'s settings (what precision.fp8 {enabled: true} means).
RecipeSettings delayed_recipe(const Fp8Settings& fp8);

// One layer's recipe, every setting resolved.
struct LayerRecipe {
  Recipe recipe = Recipe::delayed;
  std::array<Format, kFp8Slots> formats{};  // input, weight, grad
  numerics::MxScaleRule scale_rule = numerics::MxScaleRule::rceil;
  int block_size = 0;  // MX: k; blockwise: the tile (1 x B) and weight block (B x B); nvfp4 16
  bool pad_blocks = false;
  bool power_of_two_scales = false;
  bool hadamard = false, stochastic_rounding = false;
  Fp8Settings fp8;  // delayed's history settings

  Format format(Fp8Slot role) const { return formats[static_cast<std::size_t>(role)]; }
  // "mxfp4 (e2m1/e2m1/e2m1, rceil, blocks of 32)": for logs and the run record.
  std::string describe() const;
  bool operator==(const LayerRecipe&) const = default;
};

// The recipe `r` resolves to under `s`. Formats given in `s` apply to layers of s.recipe
// only; a layer overridden to another recipe takes that recipe's default formats.
LayerRecipe resolve(const RecipeSettings& s, Recipe r);

// The counter-based stream stochastic rounding draws from (numerics/rounding.hpp): element i
// of a conversion that starts at `counter` uses stochastic_bits(seed, counter + i). take(n)
// hands out the next n positions. The position is checkpointed, so a resumed run rounds the
// same way.
class StochasticStream {
 public:
  explicit StochasticStream(std::uint64_t seed = 0) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  std::uint64_t position() const { return position_; }
  void set_position(std::uint64_t p) { position_ = p; }
  std::uint64_t take(std::int64_t n) {
    const std::uint64_t first = position_;
    position_ += static_cast<std::uint64_t>(n);
    return first;
  }

 private:
  std::uint64_t seed_ = 0, position_ = 0;
};

// What the op keeps between calls (the weight's quantized copies per weight version): owned
// by the layer's state, defined by the op that fills it.
struct LinearQuantCache {
  virtual ~LinearQuantCache() = default;
};

// One linear layer's quantization: its recipe, the delayed recipe's scaling state, the
// stochastic-rounding stream (shared by the layers of a model) and the op's cache.
class LinearQuant {
 public:
  LinearQuant(LayerRecipe recipe, std::shared_ptr<StochasticStream> stream);
  const LayerRecipe& recipe() const { return recipe_; }
  // The delayed recipe's amax histories and scales (null for the other recipes).
  const std::shared_ptr<Fp8Meta>& delayed() const { return delayed_; }
  StochasticStream& stream() { return *stream_; }
  std::unique_ptr<LinearQuantCache>& cache() { return cache_; }

 private:
  LayerRecipe recipe_;
  std::shared_ptr<Fp8Meta> delayed_;
  std::shared_ptr<StochasticStream> stream_;
  std::unique_ptr<LinearQuantCache> cache_;
};

}  // namespace mantissa::precision
