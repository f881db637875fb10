#pragma once
// Internal: reading the precision_stats record (metrics.cpp dispatches to it).
#include "mantissa/report/metrics.hpp"
#include "record_fields.hpp"

namespace mantissa::report::detail {

inline constexpr const char* kPrecisionStats = "precision_stats";

// The record whose first key is kPrecisionStats; mantissa::Error naming the file, line and
// field for a missing or mistyped field, an unknown role or format, a count out of range.
PrecisionStatsRecord read_precision_stats(const Fields& f);

}  // namespace mantissa::report::detail
