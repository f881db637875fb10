#pragma once
// The precision report: one self-contained HTML page (inline SVG and CSS; no script, and
// nothing fetched, so it opens offline) drawn from the metrics of one or more runs, typically
// the same job in several formats (`mantissa compare`, `mantissa report`). It shows the
// training and validation losses overlaid, each run's difference from the float32 run, the
// loss scale with the skipped steps marked, the gradient norm, the learning rate, throughput
// and peak memory, a table of final metrics, each run's mixed-precision settings, which
// parameters overflowed how often, and the formats' properties. docs/cli.md describes it.
#include <string>
#include <vector>

#include "mantissa/report/metrics.hpp"

namespace mantissa::report {

struct ReportOptions {
  std::string title = "mantissa precision report";
  std::string subtitle;  // e.g. the config the runs came from
};

// A pure function of its inputs: the same runs give the same page. Runs are drawn in the
// order given (styles by position); differences are taken from the first float32 run.
// Throws mantissa::Error when `runs` is empty.
std::string render_report(const std::vector<RunLog>& runs, const ReportOptions& options = {});

}  // namespace mantissa::report
