#pragma once
// The training formats as command-line words (`bench train --precision`, `compare
// --formats`), and the config overrides that make a config train in one of them.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/numerics/format.hpp"

namespace mantissa::app {

// float32 (mixed precision off), bfloat16, float16, cbfloat16: the formats a run trains in.
numerics::Format parse_training_format(std::string_view word, std::string_view option);

// Overrides applied after the user's --set: `format` (float32 turns mixed precision off;
// float16 and cbfloat16 get dynamic loss scaling unless `loss_scaling` is given),
// `loss_scaling` ("dynamic" or a number; empty: unchanged), `opt_level` (< 0: unchanged),
// `route` (a matmul_route word; empty: unchanged).
std::vector<std::string> precision_overrides(std::optional<numerics::Format> format,
                                             const std::string& loss_scaling, int opt_level,
                                             const std::string& route);

}  // namespace mantissa::app
