#include "report_runs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "mantissa/error.hpp"
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

// Runs of one job: the same format story and settings, model and sizes; only the seed (and
// so the initial weights and batches) may differ.
bool same_job(const RunLog& a, const RunLog& b) {
  const RunRecord &x = a.run, &y = b.run;
  return format_label(a) == format_label(b) && x.fp8 == y.fp8 && x.loss_scaling == y.loss_scaling &&
         x.model == y.model && x.parameters == y.parameters && x.unit == y.unit &&
         x.items_per_step == y.items_per_step && x.max_steps == y.max_steps &&
         x.settings == y.settings;
}

// The windows' throughput, the first (warm-up) left out when there are others.
void add_window_throughputs(const RunLog& log, std::vector<double>& v) {
  for (std::size_t i = log.windows.size() > 1 ? 1 : 0; i < log.windows.size(); ++i) {
    if (std::isfinite(log.windows[i].items_per_second))
      v.push_back(log.windows[i].items_per_second);
  }
}

// The page compares what formats do to one model: the same directory twice, or runs of
// different models (the loss of one minus another's measures nothing), are refused.
void check_one_model(const std::vector<RunLog>& logs) {
  namespace fs = std::filesystem;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      const fs::path a = fs::path(logs[i].source).parent_path();
      const fs::path b = fs::path(logs[j].source).parent_path();
      if (fs::equivalent(a, b, ec) && !ec) {
        throw Error("report: " + a.string() + " is given twice (as " + b.string() + ")");
      }
      const RunRecord &x = logs[i].run, &y = logs[j].run;
      if (x.model != y.model || x.parameters != y.parameters) {
        throw Error("report: " + logs[j].source + " holds a " + y.model + " of " +
                    std::to_string(y.parameters) + " parameters, " + logs[i].source + " a " +
                    x.model + " of " + std::to_string(x.parameters) +
                    ": the report compares formats on one model (report them separately)");
      }
    }
  }
}

// Each interleaved throughput record given is drawn: one that matches no run is an error.
void check_throughput_drawn(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  if (options.throughput.empty()) return;
  for (const ReportRun& r : runs) {
    if (r.throughput != nullptr) return;
  }
  std::string theirs, ours;
  for (const ThroughputRecord& t : options.throughput)
    theirs += (theirs.empty() ? "" : ", ") + t.run;
  for (const ReportRun& r : runs) ours += (ours.empty() ? "" : ", ") + start_precision(*r.log);
  throw Error("report --throughput: no record matches a run (records for " + theirs +
              "; runs that started in " + ours +
              "; two runs that started in one format share none)");
}

}  // namespace

std::vector<ReportRun> report_runs(const std::vector<RunLog>& logs, const ReportOptions& options) {
  check_one_model(logs);
  std::vector<ReportRun> runs;
  for (const RunLog& l : logs) {
    ReportRun* group = nullptr;
    if (options.group_seeds) {
      for (ReportRun& r : runs) {
        if (same_job(*r.log, l)) group = &r;
      }
    }
    if (group == nullptr) {
      runs.push_back(ReportRun{{&l}, &l, format_label(l), {}, nullptr});
      continue;
    }
    for (const RunLog* other : group->logs) {
      if (other->run.seed == l.run.seed) {
        throw Error("report: " + other->source + " and " + l.source +
                    " are the same job with the same seed " + std::to_string(l.run.seed) +
                    " (grouping seeds averages runs of different seeds)");
      }
    }
    group->logs.push_back(&l);
  }
  std::map<std::string, int> per_label, per_start;
  for (const ReportRun& r : runs) {
    ++per_label[r.label];
    ++per_start[start_precision(*r.log)];
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ReportRun& r = runs[i];
    if (per_label[r.label] > 1) r.label += " (" + directory_name(r.log->source) + ")";
    r.style = kStyles[i % kStyles.size()];
    // An interleaved record names a format; two runs that started in it cannot share one.
    const std::string start = start_precision(*r.log);
    for (const ThroughputRecord& t : options.throughput) {
      if (t.run == start && per_start[start] == 1) r.throughput = &t;
    }
  }
  check_throughput_drawn(runs, options);
  return runs;
}

const ReportRun* reference_run(const std::vector<ReportRun>& runs) {
  for (const ReportRun& r : runs) {
    if (r.log->run.format == numerics::Format::float32 && !r.log->run.fp8 &&
        r.log->fallbacks.empty())
      return &r;
  }
  return nullptr;
}

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  s.n = values.size();
  if (values.empty()) return s;
  double sum = 0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  double squares = 0;
  for (const double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(squares / static_cast<double>(s.n - 1)) : 0.0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.lo = *lo;
  s.hi = *hi;
  return s;
}

std::string spread_text(const Spread& s, const char* spec) {
  const auto num = [&](double v) {
    return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("not finite");
  };
  if (s.n <= 1) return num(s.mean);
  return num(s.mean) + " &plusmn; " + num(s.sd);
}

std::vector<StepSpread> across_seeds(const std::vector<std::map<double, double>>& per_seed) {
  std::vector<StepSpread> out;
  if (per_seed.empty()) return out;
  for (const auto& [step, first] : per_seed.front()) {
    std::vector<double> values{first};
    for (std::size_t k = 1; k < per_seed.size(); ++k) {
      const auto it = per_seed[k].find(step);
      if (it == per_seed[k].end()) break;
      values.push_back(it->second);
    }
    if (values.size() == per_seed.size()) out.push_back({step, spread_of(values)});
  }
  return out;
}

double own_throughput(const ReportRun& r) {
  std::vector<double> v;
  for (const RunLog* l : r.logs) add_window_throughputs(*l, v);
  return support::median(v);
}

std::string rate_text(double items_per_second, const std::string& unit) {
  if (!std::isfinite(items_per_second)) return "n/a";
  // Past 10^15 (no machine's rate; a file's) in exponent form: a long long holds no rate
  // past 2^63, and llround's answer there was -2^63.
  if (std::abs(items_per_second) >= 1e15) {
    return fmt::format("{:.3g} {}/s", items_per_second, unit);
  }
  return fmt::format("{} {}/s", support::grouped(std::llround(items_per_second)), unit);
}

std::string own_throughput_text(const ReportRun& r) {
  return rate_text(own_throughput(r), r.log->run.unit);
}

std::optional<double> peak_rss(const ReportRun& r) {
  std::optional<double> peak;
  for (const RunLog* l : r.logs) {
    for (const WindowRecord& w : l->windows) {
      if (w.peak_rss_mib && (!peak || *w.peak_rss_mib > *peak)) peak = w.peak_rss_mib;
    }
  }
  return peak;
}

const std::vector<int>& same_bits_levels(const RunLog& log) {
  if (!log.routes.empty() && !log.routes.back().same_bits_opt_levels.empty())
    return log.routes.back().same_bits_opt_levels;
  return log.run.same_bits_opt_levels;
}

}  // namespace mantissa::report::detail
