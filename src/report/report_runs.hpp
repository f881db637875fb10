#pragma once
// Internal: the runs of a report (report.cpp) with what the charts and tables share: each
// run's label and style, the reference run, and figures derived from the records. A run of
// the report is one run directory, or (ReportOptions::group_seeds) the runs of one job with
// different seeds, drawn as their mean and spread.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/report/metrics.hpp"
#include "mantissa/report/report.hpp"
#include "svg_plot.hpp"

namespace mantissa::report::detail {

struct ReportRun {
  std::vector<const RunLog*> logs;  // one run, or the seeds of one job
  const RunLog* log = nullptr;      // the first of them: its settings stand for all
  // The format ("float16 → bfloat16" after a fall-back), and "(directory)" when two runs
  // share it.
  std::string label;
  plot::Style style;
  const ThroughputRecord* throughput = nullptr;  // measured interleaved, when given
  std::size_t seeds() const { return logs.size(); }
};

// Styles by position: black, blue, vermilion, orange, sky blue, green, each with its own
// dash pattern and marker (so the runs stay apart in greyscale), repeating after six. Throws
// mantissa::Error for two runs of one group with the same seed.
std::vector<ReportRun> report_runs(const std::vector<RunLog>& logs, const ReportOptions& options);
// The first float32 run: what differences are taken from. Null when there is none.
const ReportRun* reference_run(const std::vector<ReportRun>& runs);

// A figure over a run's seeds: their mean, sample standard deviation (0 for one), lowest and
// highest.
struct Spread {
  double mean = 0, sd = 0, lo = 0, hi = 0;
  std::size_t n = 0;
};
Spread spread_of(const std::vector<double>& values);
// "2.3456" for one value; "2.3456 ± 0.0040" (the standard deviation) for several.
std::string spread_text(const Spread& s, const char* spec = "{:.4f}");

// A value per step across a run's seeds, at the steps every seed recorded, in step order.
struct StepSpread {
  double step = 0;
  Spread value;
};
std::vector<StepSpread> across_seeds(const std::vector<std::map<double, double>>& per_seed);
// `value` of each record of `records` (windows or evals), per step across the seeds.
template <class Record, class Value>
std::vector<StepSpread> record_spread(const ReportRun& r, std::vector<Record> RunLog::*records,
                                      Value value) {
  std::vector<std::map<double, double>> per_seed;
  for (const RunLog* l : r.logs) {
    std::map<double, double>& m = per_seed.emplace_back();
    for (const Record& rec : l->*records) m[static_cast<double>(rec.step)] = value(rec);
  }
  return across_seeds(per_seed);
}
template <class Value>
std::vector<StepSpread> window_spread(const ReportRun& r, Value value) {
  return record_spread(r, &RunLog::windows, value);
}
template <class Value>
std::vector<StepSpread> eval_spread(const ReportRun& r, Value value) {
  return record_spread(r, &RunLog::evals, value);
}

// Each seed's own training throughput (the windows after the first, warm-up excluded):
// their median, and "1,234 tokens/s" or "n/a". Measured one run after another: not a
// comparison of formats (the interleaved record is).
double own_throughput(const ReportRun& r);
std::string own_throughput_text(const ReportRun& r);
// "1,234 tokens/s" of an interleaved record.
std::string rate_text(double items_per_second, const std::string& unit);
// The largest peak RSS any window of any seed recorded.
std::optional<double> peak_rss(const ReportRun& r);

// The other precision_opt_level values that compute this run's bits on its routes: the last
// routes record's, or the run record's.
const std::vector<int>& same_bits_levels(const RunLog& log);

}  // namespace mantissa::report::detail
