#pragma once
// fp8 training as NVIDIA's Transformer Engine defines it (the "delayed scaling" recipe): the
// inputs of a linear layer's products are cast to an 8-bit format with a per-tensor scale,
// chosen from the history of that tensor's largest magnitude (amax) so that its values use
// the format's range. Forward inputs (activations, weights) in float8_e4m3; gradients in
// float8_e5m2 under the hybrid recipe, or float8_e4m3 too. Products accumulate in float32
// and are scaled back by 1 / (scale_a * scale_b).
//
// The scale a tensor is cast with at step t comes from the amaxes of steps before t (delayed):
//   amax  = max over the last `history_length` recorded amaxes (or the most recent one)
//   scale = format max / amax / 2^margin     (kept as it was while amax is 0)
// A step whose tensor held inf or NaN records no amax (0) rather than freeze the scale for a
// whole window.
// Scales start at 1. Values past the format's range saturate to its max (counted as
// overflows); nonzero values that round to 0 are counted as underflows.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"

namespace mantissa::precision {

using numerics::Format;

enum class Fp8Recipe : std::uint8_t {
  hybrid,  // e4m3 forward, e5m2 gradients (Transformer Engine's HYBRID)
  e4m3,    // e4m3 everywhere (Transformer Engine's E4M3)
};
inline constexpr NameTable<Fp8Recipe, 2> kFp8RecipeNames = {{
    {"hybrid", Fp8Recipe::hybrid},
    {"e4m3", Fp8Recipe::e4m3},
}};
static_assert(in_enum_order(kFp8RecipeNames, static_cast<std::size_t>(Fp8Recipe::e4m3) + 1));

enum class AmaxCompute : std::uint8_t {
  max,          // the largest amax in the history window
  most_recent,  // the last step's amax
};
inline constexpr NameTable<AmaxCompute, 2> kAmaxComputeNames = {{
    {"max", AmaxCompute::max},
    {"most_recent", AmaxCompute::most_recent},
}};
static_assert(in_enum_order(kAmaxComputeNames,
                            static_cast<std::size_t>(AmaxCompute::most_recent) + 1));

struct Fp8Settings {
  bool enabled = false;
  Fp8Recipe recipe = Fp8Recipe::hybrid;
  int history_length = 1024;  // Transformer Engine's default
  AmaxCompute amax_compute = AmaxCompute::max;
  int margin = 0;  // scale down by 2^margin more

  // Throws mantissa::Error naming history_length / margin and the allowed range.
  void validate() const;
  bool operator==(const Fp8Settings&) const = default;
};

// The tensors of a linear layer that are cast to fp8.
enum class Fp8Slot : std::uint8_t { input, weight, grad };
inline constexpr int kFp8Slots = 3;
inline constexpr NameTable<Fp8Slot, 3> kFp8SlotNames = {{
    {"input", Fp8Slot::input},
    {"weight", Fp8Slot::weight},
    {"grad", Fp8Slot::grad},
}};
static_assert(in_enum_order(kFp8SlotNames, static_cast<std::size_t>(Fp8Slot::grad) + 1));

// One linear layer's fp8 scaling state: per slot, the scale in use, the amax history and
// this step's amax and overflow / underflow counts.
class Fp8Meta {
 public:
  // Formats from settings.recipe (e4m3; e5m2 for gradients under hybrid), or given per slot.
  explicit Fp8Meta(const Fp8Settings& settings);
  Fp8Meta(const Fp8Settings& settings, const std::array<Format, kFp8Slots>& formats);

  const Fp8Settings& settings() const { return settings_; }
  Format format(Fp8Slot slot) const { return formats_[static_cast<std::size_t>(slot)]; }
  float scale(Fp8Slot slot) const { return scale_[index(slot)]; }

  // What a cast found this step (several casts per step combine: max of amax, sum of counts).
  void record(Fp8Slot slot, float amax, std::int64_t overflows, std::int64_t underflows);

  // At the end of an optimizer step: this step's amaxes enter the histories, the scales for
  // the next step follow the recipe, and the step's counts move to last_step_counts().
  void update();

  struct Counts {
    std::int64_t overflows = 0, underflows = 0;
  };
  const std::array<Counts, kFp8Slots>& last_step_counts() const { return last_; }

  // This step's figures so far (before update()), and a replacement for them: data-parallel
  // processes combine theirs (max of amax, sum of counts) so that every one updates alike.
  struct StepFigures {
    std::array<float, kFp8Slots> amax{};
    std::array<Counts, kFp8Slots> counts{};
  };
  StepFigures step_figures() const { return {amax_, counts_}; }
  void set_step_figures(const StepFigures& f) {
    amax_ = f.amax;
    counts_ = f.counts;
  }

  // The state a checkpoint holds: the histories [slot][i], i = 0 the most recent step, and
  // the scales. set_state checks the sizes (mantissa::Error naming what does not fit).
  const std::vector<float>& history() const { return history_; }
  const std::array<float, kFp8Slots>& scales() const { return scale_; }
  void set_state(const std::vector<float>& history, const std::array<float, kFp8Slots>& scales);

 private:
  static int index(Fp8Slot s) { return static_cast<int>(s); }
  Fp8Settings settings_;
  std::array<Format, kFp8Slots> formats_{};
  std::vector<float> history_;  // kFp8Slots x history_length, most recent first
  std::array<float, kFp8Slots> scale_{1.0f, 1.0f, 1.0f};
  std::array<float, kFp8Slots> amax_{};  // this step's
  std::array<Counts, kFp8Slots> counts_{}, last_{};
};

// The fp8 casts' overflows and underflows over a window (precision.fp8): the totals, and each
// tensor ("<layer>.<slot>", slots input, weight, grad) that had any.
struct Fp8TensorCounts {
  std::string tensor;
  std::int64_t overflows = 0, underflows = 0;
};
struct Fp8WindowCounts {
  std::int64_t overflows = 0, underflows = 0;
  std::vector<Fp8TensorCounts> tensors;
};

}  // namespace mantissa::precision
