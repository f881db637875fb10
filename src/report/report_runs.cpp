#include "report_runs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "support/number_text.hpp"
#include "support/statistics.hpp"

namespace mantissa::report::detail {
namespace {

// Okabe-Ito colours ordered so that neighbours differ in lightness too (greyscale:
// 0, 87, 119, 162, 158, 106 of 255), and a dash pattern and marker each.
const std::array<plot::Style, 6> kStyles = {{
    {"#000000", "", plot::Marker::circle},
    {"#0072B2", "9 4", plot::Marker::square},
    {"#D55E00", "2 3", plot::Marker::triangle},
    {"#E69F00", "12 3 3 3", plot::Marker::diamond},
    {"#56B4E9", "5 5", plot::Marker::circle},
    {"#009E73", "1 6", plot::Marker::square},
}};

std::string directory_name(const std::string& metrics_file) {
  const std::filesystem::path dir = std::filesystem::path(metrics_file).parent_path();
  return dir.filename().empty() ? dir.string() : dir.filename().string();
}

}  // namespace

std::vector<ReportRun> report_runs(const std::vector<RunLog>& logs) {
  // A run is named by what it trains in: its format, or its linear layers' recipe (fp8 for
  // the delayed one, as before recipes; mxfp4, ...).
  const auto name = [](const RunLog& l) {
    if (const auto r = find_named(precision::kRecipeNames, l.run.recipe)) {
      return std::string(name_of(precision::kRecipeShortNames, *r));
    }
    return l.run.fp8 ? std::string("fp8") : std::string(numerics::name(l.run.format));
  };
  std::map<std::string, int> per_name;
  for (const RunLog& l : logs) ++per_name[name(l)];
  std::vector<ReportRun> runs;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    ReportRun r;
    r.log = &logs[i];
    r.label = name(logs[i]);
    if (per_name[r.label] > 1) r.label += " (" + directory_name(logs[i].source) + ")";
    r.style = kStyles[i % kStyles.size()];
    runs.push_back(r);
  }
  return runs;
}

const ReportRun* reference_run(const std::vector<ReportRun>& runs) {
  for (const ReportRun& r : runs) {
    if (r.log->run.format == numerics::Format::float32) return &r;
  }
  return nullptr;
}

namespace {

// The windows' throughput, the first (warm-up) left out when there are others.
std::vector<double> window_throughputs(const RunLog& log) {
  std::vector<double> v;
  for (std::size_t i = log.windows.size() > 1 ? 1 : 0; i < log.windows.size(); ++i) {
    if (std::isfinite(log.windows[i].items_per_second))
      v.push_back(log.windows[i].items_per_second);
  }
  return v;
}

}  // namespace

double median_throughput(const RunLog& log) {
  return support::median(window_throughputs(log));
}

std::optional<plot::Range> throughput_range(const RunLog& log) {
  const std::vector<double> v = window_throughputs(log);
  if (v.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return plot::Range{*lo, *hi};
}

std::string throughput_text(const RunLog& log) {
  const double rate = median_throughput(log);
  if (!std::isfinite(rate)) return "n/a";
  return fmt::format("{} {}/s", support::grouped(std::llround(rate)), log.run.unit);
}

std::optional<double> peak_rss(const RunLog& log) {
  std::optional<double> peak;
  for (const WindowRecord& w : log.windows) {
    if (w.peak_rss_mib && (!peak || *w.peak_rss_mib > *peak)) peak = w.peak_rss_mib;
  }
  return peak;
}

const EvalRecord* last_eval(const RunLog& log) {
  return log.evals.empty() ? nullptr : &log.evals.back();
}

}  // namespace mantissa::report::detail
