#pragma once
// What a resumed run changed: its run record against the one of the part before it
// (report/metrics.hpp's SettingsChange).
#include <vector>

#include "mantissa/report/metrics.hpp"

namespace mantissa::report::detail {

// The settings in which `after` (a resumed run's record, start_step > 0) differs from
// `before`, the record of the part it continued. `fallbacks` are the log's fall-backs so
// far: one after before.start_step and at or before after.start_step means the format
// changed in between by itself, so only the rows a fall-back leaves alone are compared.
SettingsChange settings_change(const RunRecord& before,
                               const std::vector<FallbackRecord>& fallbacks,
                               const RunRecord& after);

}  // namespace mantissa::report::detail
