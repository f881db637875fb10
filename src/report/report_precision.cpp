// The report's "which layer loses what" section (report_parts.hpp): per run, heat maps of the
// rounding sites x sampled steps (signal-to-noise ratio, fraction flushed to zero) and a table
// of the sites that lose most on the last sampled step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "report_parts.hpp"
#include "svg_heatmap.hpp"

namespace mantissa::report::detail {
namespace {

using plot::escape;

constexpr std::size_t kTableRows = 30;
// The maps draw at most kMapColumns sampled steps (evenly spaced, the first and the last
// among them) and the first kMapRows sites in their order: a file of many sampled steps, each
// with sites of its own, once made a map of steps x sites cells (a 0.8 MB metrics.jsonl of
// 4,000 such steps: a 6.8 GB page, 20 GB of memory, 130 s).
constexpr std::size_t kMapColumns = 60, kMapRows = 400;

// What tells a site apart within a run.
using SiteKey = std::tuple<std::string, std::string, precision::QuantRole, numerics::Format>;
SiteKey key_of(const PrecisionSite& s) {
  return {s.layer, s.op, s.role, s.format};
}

bool forward_role(precision::QuantRole r) {
  return r == precision::QuantRole::input || r == precision::QuantRole::weight ||
         r == precision::QuantRole::output;
}

std::string layer_text(const std::string& layer) {
  return layer.empty() ? "(top level)" : layer;
}

// A run's sites in the order the maps draw them: layers in the order the forward first
// rounded in them (a layer with backward sites only, such as a block's residual adds, just
// before its first sub-layer), then within a layer its ops as first seen and the roles in
// order.
std::vector<SiteKey> ordered_sites(const RunLog& log) {
  std::map<std::string, std::size_t> forward_rank, seen_rank;
  std::map<std::pair<std::string, std::string>, std::size_t> op_rank;
  std::vector<SiteKey> keys;
  std::set<SiteKey> seen;
  std::size_t n = 0;
  for (const PrecisionStatsRecord& rec : log.precision_stats) {
    for (const PrecisionSite& s : rec.sites) {
      ++n;
      if (forward_role(s.role)) forward_rank.emplace(s.layer, n);
      seen_rank.emplace(s.layer, n);
      op_rank.emplace(std::pair{s.layer, s.op}, n);
      if (seen.insert(key_of(s)).second) keys.push_back(key_of(s));
    }
  }
  const auto rank = [&](const std::string& layer) {
    if (const auto own = forward_rank.find(layer); own != forward_rank.end()) return own->second;
    // Its sub-layers ("<layer>.<name>"), which sort together from "<layer>.".
    std::size_t best = std::numeric_limits<std::size_t>::max();
    const std::string prefix = layer + ".";
    for (auto it = forward_rank.lower_bound(prefix);
         it != forward_rank.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      best = std::min(best, it->second);
    }
    return best != std::numeric_limits<std::size_t>::max() ? best : n + seen_rank.at(layer);
  };
  std::map<std::string, std::size_t> layer_rank;
  for (const SiteKey& k : keys) layer_rank.emplace(std::get<0>(k), rank(std::get<0>(k)));
  std::stable_sort(keys.begin(), keys.end(), [&](const SiteKey& a, const SiteKey& b) {
    const auto order = [&](const SiteKey& k) {
      return std::tuple{layer_rank.at(std::get<0>(k)), std::get<0>(k),
                        op_rank.at({std::get<0>(k), std::get<1>(k)}), std::get<2>(k),
                        std::get<3>(k)};
    };
    return order(a) < order(b);
  });
  return keys;
}

// "blocks.0.fc · linear · weight", the format added where a label would repeat (a run that
// fell back to a wider H).
std::vector<std::string> site_labels(const std::vector<SiteKey>& keys) {
  std::vector<std::string> labels;
  std::map<std::string, int> uses;
  for (const SiteKey& k : keys) {
    labels.push_back(layer_text(std::get<0>(k)) + " \u00b7 " + std::get<1>(k) + " \u00b7 " +
                     std::string(name_of(precision::kQuantRoleNames, std::get<2>(k))));
    ++uses[labels.back()];
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (uses[labels[i]] > 1)
      labels[i] += " (" + std::string(numerics::name(std::get<3>(keys[i]))) + ")";
  }
  return labels;
}

double flushed_fraction(const PrecisionSite& s) {
  return s.counts.elements > 0
             ? static_cast<double>(s.counts.flushed) / static_cast<double>(s.counts.elements)
             : 0.0;
}

double snr_value(const PrecisionSite& s) {
  return s.snr_db ? *s.snr_db : std::numeric_limits<double>::infinity();
}

// The sampled steps the maps draw (indices into the run's records): every one, or
// kMapColumns of them evenly spaced from the first to the last.
std::vector<std::size_t> map_columns(std::size_t records) {
  std::vector<std::size_t> out;
  const std::size_t n = std::min(records, kMapColumns);
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(records <= kMapColumns ? i : i * (records - 1) / (kMapColumns - 1));
  return out;
}

// A map of the sites `keys` (its rows, `labels`) over the sampled steps `columns`.
template <class Value>
plot::HeatMap heat_map(const RunLog& log, const std::vector<SiteKey>& keys,
                       const std::vector<std::string>& labels,
                       const std::vector<std::size_t>& columns, Value value) {
  plot::HeatMap m;
  m.rows = labels;
  m.column_label = "sampled step";
  std::map<SiteKey, std::size_t> row_of;
  for (std::size_t r = 0; r < keys.size(); ++r) row_of.emplace(keys[r], r);
  m.values.assign(keys.size(), std::vector<std::optional<double>>(columns.size(), std::nullopt));
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const PrecisionStatsRecord& rec = log.precision_stats[columns[c]];
    m.columns.push_back(std::to_string(rec.step));
    for (const PrecisionSite& s : rec.sites) {
      if (const auto row = row_of.find(key_of(s)); row != row_of.end())
        m.values[row->second][c] = value(s);
    }
  }
  return m;
}

std::string percent(std::int64_t count, std::int64_t total) {
  if (count == 0) return "0";
  return fmt::format("{:.3g}%", 100.0 * static_cast<double>(count) / static_cast<double>(total));
}

std::string snr_text(const std::optional<double>& snr) {
  return snr ? fmt::format("{:.2f}", *snr) : "exact";
}

// The sites of the last sampled step that lose most (lowest SNR first), with the worst SNR
// each had over the sampled steps.
std::string sites_table(const RunLog& log, std::size_t index, bool maps_hold_every_site) {
  const PrecisionStatsRecord& last = log.precision_stats.back();
  std::map<SiteKey, std::pair<double, std::int64_t>> worst;  // lowest SNR and its step
  for (const PrecisionStatsRecord& rec : log.precision_stats) {
    for (const PrecisionSite& s : rec.sites) {
      auto [it, fresh] = worst.emplace(key_of(s), std::pair{snr_value(s), rec.step});
      if (!fresh && snr_value(s) < it->second.first) it->second = {snr_value(s), rec.step};
    }
  }
  std::vector<const PrecisionSite*> rows;
  for (const PrecisionSite& s : last.sites) rows.push_back(&s);
  std::stable_sort(rows.begin(), rows.end(), [](const PrecisionSite* a, const PrecisionSite* b) {
    return snr_value(*a) < snr_value(*b);
  });
  std::string out = fmt::format(
      "<table class=\"sites\" id=\"sites-{}\">\n<tr><th>layer</th><th>op</th><th>role</th>"
      "<th>format</th><th>elements</th><th>flushed to 0</th><th>subnormal</th><th>saturated</th>"
      "<th>overflowed</th><th>inf/NaN before</th><th>SNR (dB), step {}</th><th>lowest SNR (dB) "
      "[step]</th>"
      "<th>scale range</th></tr>\n",
      index, last.step);
  for (std::size_t k = 0; k < rows.size() && k < kTableRows; ++k) {
    const PrecisionSite& s = *rows[k];
    const auto& [low, low_step] = worst.at(key_of(s));
    const std::int64_t n = s.counts.elements;
    out += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} [{}]</td><td>{}</td></tr>\n",
        escape(layer_text(s.layer)), escape(s.op), name_of(precision::kQuantRoleNames, s.role),
        numerics::name(s.format), n, percent(s.counts.flushed, n), percent(s.counts.subnormal, n),
        percent(s.counts.saturated, n), percent(s.counts.overflowed, n),
        percent(s.counts.nonfinite, n), snr_text(s.snr_db),
        std::isfinite(low) ? fmt::format("{:.2f}", low) : "exact", low_step,
        s.scale ? fmt::format("{:.4g} &ndash; {:.4g}", s.scale->min, s.scale->max) : "&mdash;");
  }
  out += "</table>\n";
  if (rows.size() > kTableRows) {
    out += fmt::format("<p class=\"note\">and {} more sites{}.</p>\n", rows.size() - kTableRows,
                       maps_hold_every_site ? " (every one is in the maps)" : "");
  }
  return out;
}

// The ranges the maps of every run share, so that a colour means the same in each.
struct SharedRanges {
  std::optional<plot::Range> snr, flushed;
};

SharedRanges shared_ranges(const std::vector<ReportRun>& runs) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  plot::Range snr{kInf, -kInf}, flushed{kInf, -kInf};
  for (const ReportRun& r : runs) {
    for (const PrecisionStatsRecord& rec : r.log->precision_stats) {
      for (const PrecisionSite& s : rec.sites) {
        if (s.snr_db) snr = {std::min(snr.lo, *s.snr_db), std::max(snr.hi, *s.snr_db)};
        const double f = flushed_fraction(s);
        if (f > 0) flushed = {std::min(flushed.lo, f), std::max(flushed.hi, f)};
      }
    }
  }
  SharedRanges out;
  if (snr.lo <= snr.hi) out.snr = snr;
  if (flushed.lo <= flushed.hi) out.flushed = flushed;
  return out;
}

std::string run_part(const ReportRun& r, std::size_t index, const SharedRanges& ranges) {
  const RunLog& log = *r.log;
  std::string out = "<h3>" + plot::swatch(r.style) + " " + escape(r.label) + "</h3>\n";
  if (log.precision_stats.empty()) {
    return out +
           "<p class=\"note\">No sampled steps: this run did not measure them "
           "(trainer.init.logging.precision_stats_steps).</p>\n";
  }
  if (r.logs.size() > 1) {
    out += "<p class=\"note\">The first seed's sampled steps (" + escape(log.source) + ").</p>\n";
  }
  std::vector<SiteKey> keys = ordered_sites(log);
  if (keys.empty()) {
    return out +
           "<p class=\"note\">Nothing was rounded on the sampled steps (a float32 run).</p>\n";
  }
  std::vector<std::string> labels = site_labels(keys);
  const std::vector<std::size_t> columns = map_columns(log.precision_stats.size());
  if (columns.size() < log.precision_stats.size()) {
    out += fmt::format(
        "<p class=\"note\">The maps draw {} of the {} sampled steps, evenly spaced from the "
        "first to the last.</p>\n",
        columns.size(), log.precision_stats.size());
  }
  const bool every_site = keys.size() <= kMapRows;
  if (!every_site) {
    out += fmt::format(
        "<p class=\"note\">The maps draw the first {} of the {} rounding sites; the table "
        "below lists the sites that lose most.</p>\n",
        kMapRows, keys.size());
    keys.resize(kMapRows);
    labels.resize(kMapRows);
  }
  plot::HeatMap snr = heat_map(log, keys, labels, columns, snr_value);
  snr.id = fmt::format("heat-snr-{}", index);
  snr.title = "Signal-to-noise ratio of each rounding (" + r.label + ")";
  snr.value_label = "SNR (dB)";
  snr.special_label = "exact";
  snr.unit = " dB";
  snr.range = ranges.snr;
  plot::HeatMap flushed = heat_map(log, keys, labels, columns, flushed_fraction);
  flushed.id = fmt::format("heat-flushed-{}", index);
  flushed.title = "Fraction flushed to zero (" + r.label + ")";
  flushed.value_label = "fraction flushed to 0";
  flushed.scale = plot::Scale::log10;
  flushed.high_is_bad = true;
  flushed.special_label = "none";
  flushed.range = ranges.flushed;
  out += "<div class=\"heatmaps\" data-run=\"" + escape(r.label) + "\">" + plot::render(snr) +
         plot::render(flushed) + "</div>\n";
  return out + sites_table(log, index, every_site);
}

}  // namespace

std::string precision_stats_section(const std::vector<ReportRun>& runs) {
  const SharedRanges ranges = shared_ranges(runs);
  std::string out;
  for (std::size_t i = 0; i < runs.size(); ++i) out += run_part(runs[i], i, ranges);
  return out;
}

}  // namespace mantissa::report::detail
