#pragma once
// The training formats as command-line words (`bench train --precision`, `compare
// --formats`), and the config overrides that make a config train in one of them.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/names.hpp"

namespace mantissa::app {

// What a run trains in: float32 (mixed precision off), bfloat16, float16, cbfloat16, or fp8
// (fp8 linear layers, the rest in bfloat16: precision.fp8, docs/mixed_precision.md).
enum class TrainingPrecision { float32, bfloat16, float16, cbfloat16, fp8 };
inline constexpr NameTable<TrainingPrecision, 5> kTrainingPrecisionNames = {{
    {"float32", TrainingPrecision::float32},
    {"bfloat16", TrainingPrecision::bfloat16},
    {"float16", TrainingPrecision::float16},
    {"cbfloat16", TrainingPrecision::cbfloat16},
    {"fp8", TrainingPrecision::fp8},
}};
static_assert(in_enum_order(kTrainingPrecisionNames,
                            static_cast<std::size_t>(TrainingPrecision::fp8) + 1));

// `word` as a TrainingPrecision; mantissa::Error naming `option` and the words otherwise.
TrainingPrecision parse_training_precision(std::string_view word, std::string_view option);
// A comma-separated list of them ("float32,bfloat16"), each once; mantissa::Error naming
// `option` for an unknown, empty or repeated entry.
std::vector<TrainingPrecision> parse_training_precisions(std::string_view list,
                                                         std::string_view option);

// Overrides applied after the user's --set: `precision` (float32 turns mixed precision off;
// float16 and cbfloat16 get dynamic loss scaling unless `loss_scaling` is given; fp8 turns on
// precision.fp8 with fp16_type bfloat16),
// `loss_scaling` ("dynamic" or a number; empty: unchanged), `opt_level` (< 0: unchanged),
// `route` (a matmul_route word; empty: unchanged).
std::vector<std::string> precision_overrides(std::optional<TrainingPrecision> precision,
                                             const std::string& loss_scaling, int opt_level,
                                             const std::string& route);

}  // namespace mantissa::app
