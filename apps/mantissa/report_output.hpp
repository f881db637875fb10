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
// The checks write_report makes of `out` before it reads anything (a directory's name, a run's
// own file, anything but an earlier report), for a caller that writes the report after long
// work: `mantissa compare` makes them before its first run.
void check_report_out(const std::string& out, const std::vector<std::string>& run_dirs);

}  // namespace mantissa::app
