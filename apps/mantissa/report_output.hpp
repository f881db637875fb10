#pragma once
// Writing the precision report (report/report.hpp) for run directories to an HTML file:
// shared by `mantissa report` and `mantissa compare`.
#include <string>
#include <vector>

#include "mantissa/report/report.hpp"

namespace mantissa::app {

// Reads each directory's metrics.jsonl, draws the page and writes it to `out` (its directory
// created if missing; the file replaced whole). Throws mantissa::Error naming the file.
void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const report::ReportOptions& options);

}  // namespace mantissa::app
