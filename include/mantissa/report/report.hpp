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
  // Throughput measured interleaved (metrics.hpp ThroughputRecord), matched to the runs by
  // the format they started in. Without it the report compares no throughput: runs trained
  // one after another measure the machine's other work as much as the format.
  std::vector<ThroughputRecord> throughput;
  // Runs of one job that differ only in their seed are drawn as one: the mean of their
  // curves with a band from the lowest to the highest, and tables of mean +- standard
  // deviation, so a difference between formats can be judged against run-to-run noise.
  bool group_seeds = false;
};

// A pure function of its inputs: the same runs give the same page. Runs are drawn in the
// order given (styles by position; a group of seeds where its first run is); differences are
// taken from the first float32 run. Throws mantissa::Error when `runs` is empty, and with
// group_seeds when two runs of one group have the same seed (naming both).
std::string render_report(const std::vector<RunLog>& runs, const ReportOptions& options = {});

}  // namespace mantissa::report
