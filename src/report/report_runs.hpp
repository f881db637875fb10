#pragma once
// Internal: the runs of a report (report.cpp) with what the charts and tables share: each
// run's label and style, the reference run, and figures derived from the records.
#include <optional>
#include <string>
#include <vector>

#include "mantissa/report/metrics.hpp"
#include "svg_plot.hpp"

namespace mantissa::report::detail {

struct ReportRun {
  const RunLog* log = nullptr;
  std::string label;  // the format, or "format (directory)" when two runs share a format
  plot::Style style;
};

// Styles by position: black, blue, vermilion, orange, sky blue, green, each with its own
// dash pattern and marker (so the runs stay apart in greyscale), repeating after six.
std::vector<ReportRun> report_runs(const std::vector<RunLog>& logs);
// The first float32 run: what differences are taken from. Null when there is none.
const ReportRun* reference_run(const std::vector<ReportRun>& runs);

// The median of the logging windows' throughput, the first window (warm-up) left out when
// there are others; NaN without windows.
double median_throughput(const RunLog& log);
// The slowest and fastest of those windows; nullopt without windows.
std::optional<plot::Range> throughput_range(const RunLog& log);
// "1,234 tokens/s" (the median above), or "n/a".
std::string throughput_text(const RunLog& log);
// The largest peak RSS any window recorded.
std::optional<double> peak_rss(const RunLog& log);
// The last evaluation, if any.
const EvalRecord* last_eval(const RunLog& log);

}  // namespace mantissa::report::detail
