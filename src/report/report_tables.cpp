// The report's tables, built from the runs' records (report_parts.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "mantissa/precision/policy.hpp"
#include "report_parts.hpp"
#include "support/number_text.hpp"

namespace mantissa::report::detail {
namespace {

using plot::escape;

std::string swatch(const ReportRun& r) {
  return plot::swatch(r.style);
}

std::string run_header(const std::vector<ReportRun>& runs, const std::string& first) {
  std::string out = "<tr><th>" + first + "</th>";
  for (const ReportRun& r : runs) out += "<th>" + swatch(r) + " " + escape(r.label) + "</th>";
  return out + "</tr>\n";
}

std::string signed_number(double v) {
  return std::isfinite(v) ? fmt::format("{:+.4f}", v) : "not finite";
}

// Escaped text with every "2^k" written as 2<sup>k</sup>.
std::string with_superscripts(const std::string& text) {
  const std::string escaped = escape(text);
  std::string out;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    std::size_t end = i + 2;
    if (escaped.compare(i, 2, "2^") == 0) {
      if (end < escaped.size() && escaped[end] == '-') ++end;
      while (end < escaped.size() && std::isdigit(static_cast<unsigned char>(escaped[end]))) ++end;
    }
    if (end > i + 2 && std::isdigit(static_cast<unsigned char>(escaped[end - 1]))) {
      out += "2<sup>" + escaped.substr(i + 2, end - i - 2) + "</sup>";
      i = end - 1;
    } else {
      out += escaped[i];
    }
  }
  return out;
}

// "6.1e-05 = 2^-14", "65504", "3.4e+38"
std::string format_value(double v) {
  const std::optional<int> k = support::power_of_two_exponent(v);
  const std::string decimal = fmt::format("{:.6g}", v);
  return k && (*k < -4 || *k > 16) ? decimal + " = 2<sup>" + std::to_string(*k) + "</sup>"
                                   : decimal;
}

// The figure of a run's last evaluation (at the last step every seed evaluated).
template <class Value>
std::optional<StepSpread> last_eval(const ReportRun& r, Value value) {
  const std::vector<StepSpread> v = eval_spread(r, value);
  if (v.empty()) return std::nullopt;
  return v.back();
}

// A short word on how a run ended, beside its step count ("" when it completed).
std::string ended_word(const RunLog& l) {
  if (!l.outcome) return "no end recorded";
  switch (l.outcome->outcome) {
    case RunOutcome::completed:
      return "";
    case RunOutcome::loss_scale_floor:
      return "stopped at the loss-scale floor";
    case RunOutcome::nonfinite_steps:
      return "stopped: non-finite steps";
    case RunOutcome::interrupted:
      return "interrupted";
    case RunOutcome::error:
      return "failed";
  }
  return "";
}

std::string steps_cell(const ReportRun& r) {
  std::vector<double> steps, skipped;
  std::string ended;
  for (const RunLog* l : r.logs) {
    std::int64_t last = l->windows.empty() ? l->run.start_step : l->windows.back().step;
    std::int64_t skips = l->windows.empty() ? 0 : l->windows.back().skipped_steps;
    if (l->outcome) {  // the end record knows the step that stopped the run, logged or not
      last = std::max(last, l->outcome->step);
      skips = std::max(skips, l->outcome->skipped_steps);
    }
    steps.push_back(static_cast<double>(last));
    skipped.push_back(static_cast<double>(skips));
    const std::string word = ended_word(*l);
    if (!word.empty() && ended.find(word) == std::string::npos)
      ended += (ended.empty() ? "" : "; ") + word;
  }
  const Spread st = spread_of(steps), sk = spread_of(skipped);
  const auto range = [](const Spread& s) {
    return s.lo == s.hi ? fmt::format("{:.0f}", s.lo)
                        : fmt::format("{:.0f}&ndash;{:.0f}", s.lo, s.hi);
  };
  return "<td>" + range(st) + " / " + std::to_string(r.log->run.max_steps) +
         (ended.empty() ? "" : " <small>(" + escape(ended) + ")</small>") + "</td><td>" +
         range(sk) + "</td>";
}

// How many skipped steps first went non-finite in each op (SkipRecord::first_nonfinite), per
// run: the cause, where the parameters' table shows only where it spread.
std::string origins_table(const std::vector<ReportRun>& runs) {
  std::vector<std::pair<std::string, std::vector<int>>> rows;  // in the order first seen
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const RunLog* l : runs[i].logs) {  // every seed's skipped steps
      for (const SkipRecord& s : l->skips) {
        if (!s.first_nonfinite) continue;
        const std::string what = autograd::describe(*s.first_nonfinite);
        auto it =
            std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == what; });
        if (it == rows.end()) it = rows.insert(rows.end(), {what, std::vector<int>(runs.size())});
        ++it->second[i];
      }
    }
  }
  if (rows.empty()) return "";
  std::string out = "<table class=\"origins\" id=\"overflow-origins\">\n" +
                    run_header(runs, "where the backward first went non-finite (skipped steps)");
  for (const auto& [what, per_run] : rows) {
    out += "<tr><td>" + escape(what) + "</td>";
    for (const int v : per_run) out += "<td>" + (v ? std::to_string(v) : std::string("")) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string final_metrics_table(const std::vector<ReportRun>& runs) {
  const ReportRun* ref = reference_run(runs);
  const auto loss = [](const EvalRecord& e) { return e.loss; };
  const std::optional<StepSpread> ref_eval = ref ? last_eval(*ref, loss) : std::nullopt;
  bool seeds = false, own = false;
  for (const ReportRun& r : runs) seeds = seeds || r.seeds() > 1;
  std::string out = "<table class=\"metrics\" id=\"final-metrics\">\n";
  out += "<tr><th>run</th>" + std::string(seeds ? "<th>seeds</th>" : "") +
         "<th>steps</th><th>skipped steps</th><th>training loss</th>"
         "<th>validation loss</th><th>perplexity / accuracy</th><th>validation loss &minus; " +
         std::string(ref ? escape(ref->label) : "float32") +
         "</th><th>throughput</th><th>peak RSS</th></tr>\n";
  for (const ReportRun& r : runs) {
    const std::vector<StepSpread> train =
        window_spread(r, [](const WindowRecord& w) { return w.loss; });
    const std::optional<StepSpread> e = last_eval(r, loss);
    std::string quality = "&mdash;";
    const auto ppl = last_eval(r, [](const EvalRecord& x) { return x.perplexity.value_or(NAN); });
    const auto acc = last_eval(r, [](const EvalRecord& x) { return x.accuracy.value_or(NAN); });
    if (ppl && !std::isnan(ppl->value.mean))
      quality = "perplexity " + spread_text(ppl->value, "{:.3f}");
    if (acc && !std::isnan(acc->value.mean))
      quality = "accuracy " + spread_text(acc->value, "{:.4f}");
    std::string delta = "&mdash;";
    if (e && ref_eval && &r != ref && e->step == ref_eval->step)
      delta = signed_number(e->value.mean - ref_eval->value.mean);
    std::string speed;
    if (r.throughput != nullptr) {
      speed = rate_text(r.throughput->items_per_second, r.throughput->unit) +
              " <small>(interleaved)</small>";
    } else {
      speed = own_throughput_text(r) + " &dagger;";
      own = true;
    }
    const std::optional<double> rss = peak_rss(r);
    out +=
        "<tr data-run=\"" + escape(r.label) + "\"><td>" + swatch(r) + " " + escape(r.label) +
        "</td>" + (seeds ? "<td>" + std::to_string(r.seeds()) + "</td>" : "") + steps_cell(r) +
        "<td>" + (train.empty() ? "&mdash;" : spread_text(train.back().value)) + "</td><td>" +
        (e ? spread_text(e->value) + " <small>(step " + fmt::format("{:.0f}", e->step) + ")</small>"
           : "&mdash;") +
        "</td><td>" + quality + "</td><td>" + delta + "</td><td>" + speed + "</td><td>" +
        (rss ? fmt::format("{:.0f} MiB", *rss) : "n/a") + "</td></tr>\n";
  }
  out += "</table>\n";
  if (seeds) {
    out +=
        "<p class=\"note\">With several seeds: mean &plusmn; sample standard deviation over "
        "the seeds; steps and skipped steps as the lowest&ndash;highest.</p>\n";
  }
  if (own) {
    out +=
        "<p class=\"note\">&dagger; The run's own throughput while it trained (the median "
        "logging window after the first), measured one run after another: it shows what "
        "else the machine was doing as much as the format, so it is not a comparison; "
        "<code>mantissa compare</code> measures the formats interleaved.</p>\n";
  }
  return out;
}

// Each run directory: how it ended, its fall-backs, and whether another precision_opt_level
// computes its bits.
std::string outcomes_section(const std::vector<ReportRun>& runs) {
  std::string out = "<ul class=\"outcomes\" id=\"outcomes\">\n";
  for (const ReportRun& r : runs) {
    for (const RunLog* l : r.logs) {
      out += "<li data-run=\"" + escape(r.label) + "\">" + swatch(r) + " <b>" + escape(r.label) +
             "</b> <small>(" + escape(l->source) +
             (r.seeds() > 1 ? ", seed " + std::to_string(l->run.seed) : std::string()) +
             ")</small>: " + escape(outcome_text(*l));
      for (const std::string& f : fallback_texts(*l)) out += "; " + escape(f);
      for (const std::string& c : settings_change_texts(*l)) out += "; " + escape(c);
      const std::vector<int>& same = same_bits_levels(*l);
      if (!same.empty()) {
        out += "; computes " +
               escape(precision::same_bits_note(
                   l->fallbacks.empty() ? l->run.format : l->fallbacks.front().from, same));
      }
      out += "</li>\n";
    }
  }
  return out + "</ul>\n";
}

std::string settings_table(const std::vector<ReportRun>& runs) {
  // Every run's names in its own order: a name first seen in a later run goes right after
  // that run's previous one (float32's rows lack fp16_type, which still comes after enabled).
  std::vector<std::string> names;
  for (const ReportRun& r : runs) {
    std::size_t next = 0;
    for (const SettingRow& s : r.log->run.settings) {
      auto it = std::find(names.begin(), names.end(), s.first);
      if (it == names.end()) it = names.insert(names.begin() + next, s.first);
      next = static_cast<std::size_t>(it - names.begin()) + 1;
    }
  }
  std::string out = "<table class=\"settings\" id=\"settings\">\n" + run_header(runs, "setting");
  for (const std::string& name : names) {
    out += "<tr><td>" + escape(name) + "</td>";
    for (const ReportRun& r : runs) {
      const auto& rows = r.log->run.settings;
      const auto it = std::find_if(rows.begin(), rows.end(),
                                   [&](const SettingRow& s) { return s.first == name; });
      out += "<td>" + (it == rows.end() ? std::string("&mdash;") : with_superscripts(it->second)) +
             "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string overflow_section(const std::vector<ReportRun>& runs) {
  constexpr std::size_t kMaxRows = 25, kMaxSteps = 20;
  std::string out = "<ul class=\"skips\">\n";
  std::map<std::string, std::vector<int>> counts;  // parameter -> count per run
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const RunLog* log : runs[i].logs) {
      const RunLog& l = *log;
      std::string steps;
      for (std::size_t k = 0; k < l.skips.size() && k < kMaxSteps; ++k)
        steps += (k ? ", " : "") + std::to_string(l.skips[k].step);
      if (l.skips.size() > kMaxSteps) steps += ", ...";
      out += "<li>" + swatch(runs[i]) + " <b>" + escape(runs[i].label) + "</b>" +
             (runs[i].seeds() > 1 ? " (seed " + std::to_string(l.run.seed) + ")" : "") + ": ";
      out += l.skips.empty() ? std::string("no skipped steps")
                             : fmt::format("{} skipped step{} (step{} {})", l.skips.size(),
                                           l.skips.size() == 1 ? "" : "s",
                                           l.skips.size() == 1 ? "" : "s", steps);
      out += "</li>\n";
      for (const SkipRecord& s : l.skips) {
        for (const std::string& p : s.overflowed) {
          std::vector<int>& c = counts[p];
          c.resize(runs.size());
          ++c[i];
        }
      }
    }
  }
  out += "</ul>\n";
  out += origins_table(runs);
  if (counts.empty()) return out;
  std::vector<std::pair<std::string, std::vector<int>>> rows(counts.begin(), counts.end());
  const auto total = [](const std::vector<int>& c) {
    int t = 0;
    for (int v : c) t += v;
    return t;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const auto& a, const auto& b) { return total(a.second) > total(b.second); });
  out += "<table class=\"overflows\" id=\"overflows\">\n" +
         run_header(runs, "parameter (skipped steps where its gradient overflowed)");
  for (std::size_t k = 0; k < rows.size() && k < kMaxRows; ++k) {
    out += "<tr><td><code>" + escape(rows[k].first) + "</code></td>";
    for (const int v : rows[k].second)
      out += "<td>" + (v ? std::to_string(v) : std::string("")) + "</td>";
    out += "</tr>\n";
  }
  out += "</table>\n";
  if (rows.size() > kMaxRows)
    out += fmt::format("<p class=\"note\">and {} more parameters.</p>\n", rows.size() - kMaxRows);
  return out;
}

std::string formats_table(const std::vector<ReportRun>& runs) {
  std::vector<numerics::Format> formats;
  const auto add = [&](numerics::Format f) {
    if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  };
  for (const ReportRun& r : runs) {
    add(r.log->run.format);
    for (const FallbackRecord& f : r.log->fallbacks) {
      add(f.from);
      add(f.to);
    }
    if (r.log->run.fp8) {  // the linear layers' operands
      add(numerics::Format::float8_e4m3);
      add(numerics::Format::float8_e5m2);
    }
    if (const auto recipe = find_named(precision::kRecipeNames, r.log->run.recipe)) {
      for (std::size_t role = 0; role < precision::kFp8Slots; ++role) {  // its default formats
        add(precision::default_format(*recipe, static_cast<precision::Fp8Slot>(role),
                                      precision::Fp8Recipe::hybrid));
      }
    }
  }
  std::string out =
      "<table class=\"formats\" id=\"formats\">\n<tr><th>format</th><th>sign / exponent / "
      "mantissa bits</th><th>bias</th><th>max</th><th>min normal</th><th>min subnormal</th>"
      "<th>epsilon</th></tr>\n";
  for (const numerics::Format f : formats) {
    const numerics::FormatTraits& t = numerics::traits(f);
    out += fmt::format(
        "<tr><td>{}</td><td>1 / {} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        t.name, t.layout.exponent_bits, t.layout.mantissa_bits, t.layout.bias, format_value(t.max),
        format_value(t.min_normal), format_value(t.min_subnormal), format_value(t.epsilon));
  }
  return out + "</table>\n";
}

}  // namespace mantissa::report::detail
