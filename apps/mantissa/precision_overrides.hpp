#pragma once
// The training formats as command-line words (`bench train --precision`, `compare
// --formats`), and the config overrides that make a config train in one of them.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/recipe.hpp"

namespace mantissa::app {

// What a run trains in: float32 (mixed precision off), a half format (bfloat16, float16,
// cbfloat16), or a linear-layer recipe with the rest in bfloat16 (the recipe's short name,
// precision::kRecipeShortNames: fp8 for delayed scaling, fp8_current, fp8_block, mxfp8,
// mxfp6, mxfp4, nvfp4; precision.recipe, docs/mixed_precision.md).
struct TrainingPrecision {
  numerics::Format format = numerics::Format::float32;
  std::optional<precision::Recipe> recipe;
  bool operator==(const TrainingPrecision&) const = default;
};
// "float32, bfloat16, float16, cbfloat16, fp8, fp8_current, ...": the words, in that order.
std::string training_precision_names();
std::string training_precision_name(const TrainingPrecision& p);

// `word` as a TrainingPrecision; mantissa::Error naming `option` and the words otherwise.
TrainingPrecision parse_training_precision(std::string_view word, std::string_view option);
// A comma-separated list of them ("float32,bfloat16"), each once; mantissa::Error naming
// `option` for an unknown, empty or repeated entry.
std::vector<TrainingPrecision> parse_training_precisions(std::string_view list,
                                                         std::string_view option);

// The overrides that make a config train as asked, applied around the user's --set: `before`
// it, a precision word drops the config file's fp8 and recipe settings (the word alone says
// what runs); `after` it, the word's own settings win (float32 turns mixed precision off;
// float16 and cbfloat16 get dynamic loss scaling unless `loss_scaling` is given; a recipe
// word sets precision.recipe.name with fp16_type bfloat16, keeping the user's --set recipe
// settings such as scale_rule; a word without a recipe drops any the user's --set made), then
// `loss_scaling` ("dynamic" or a number; empty: unchanged), `opt_level` (none: unchanged; any
// other value is written, and the config's range check refuses one outside 0 to 2) and
// `route` (a matmul_route word; empty: unchanged).
struct PrecisionOverrides {
  std::vector<std::string> before, after;
};
PrecisionOverrides precision_overrides(std::optional<TrainingPrecision> precision,
                                       const std::string& loss_scaling,
                                       std::optional<int> opt_level, const std::string& route);
// p.before, then `user`, then p.after.
std::vector<std::string> around(const PrecisionOverrides& p, const std::vector<std::string>& user);

}  // namespace mantissa::app
