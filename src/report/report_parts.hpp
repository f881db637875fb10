#pragma once
// Internal: the sections of the report page (report.cpp puts them together).
#include <string>
#include <vector>

#include "report_runs.hpp"

namespace mantissa::report::detail {

// The charts, each an inline <svg> in a <figure> with its caption: loss, difference from the
// reference run, loss scale with skipped steps, gradient norm, learning rate, throughput and
// peak memory.
std::string charts_section(const std::vector<ReportRun>& runs);

// Tables: final metrics (mean +- standard deviation over seeds); each run's mixed-precision
// settings; which parameters overflowed and
// how often; the formats' properties.
std::string final_metrics_table(const std::vector<ReportRun>& runs);
// Each run directory: how it ended, its fall-backs, and the other precision_opt_level values
// that compute its bits.
std::string outcomes_section(const std::vector<ReportRun>& runs);
std::string settings_table(const std::vector<ReportRun>& runs);
std::string overflow_section(const std::vector<ReportRun>& runs);
std::string formats_table(const std::vector<ReportRun>& runs);

}  // namespace mantissa::report::detail
