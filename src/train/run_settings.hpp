#pragma once
// Internal: the mixed-precision settings a run is under, written out for its run record
// (metrics.hpp) and so for the report: one row per key of the precision block
// (docs/mixed_precision.md), named as the key, with the effective value (defaults filled in,
// the scaler's from the scaler itself); matmul_route also names the route taken here and
// why. Keys that do not apply are left out (the scaler's without a dynamic scaler,
// fp16_type when mixed precision is off).
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/amp/mixed_precision.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/report/metrics.hpp"

namespace mantissa::train::detail {

// scaler: the run's loss scaler, or null when it has none (mixed precision off, bfloat16,
// no loss_scaling_factor).
report::LossScalingMode loss_scaling_mode(const amp::GradScaler* scaler);
std::vector<report::SettingRow> precision_settings(const amp::MixedPrecision& settings,
                                                   const precision::Policy& policy,
                                                   const amp::GradScaler* scaler);

}  // namespace mantissa::train::detail
