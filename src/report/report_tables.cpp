// The report's tables, built from the runs' records (report_parts.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

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

std::string number(double v, const char* spec = "{:.4f}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "not finite";
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

}  // namespace

std::string final_metrics_table(const std::vector<ReportRun>& runs) {
  const ReportRun* ref = reference_run(runs);
  const EvalRecord* ref_eval = ref ? last_eval(*ref->log) : nullptr;
  std::string out = "<table class=\"metrics\" id=\"final-metrics\">\n";
  out +=
      "<tr><th>run</th><th>steps</th><th>skipped steps</th><th>training loss</th>"
      "<th>validation loss</th><th>perplexity / accuracy</th><th>validation loss &minus; " +
      std::string(ref ? escape(ref->label) : "float32") +
      "</th><th>throughput</th><th>peak RSS</th></tr>\n";
  for (const ReportRun& r : runs) {
    const RunLog& l = *r.log;
    const WindowRecord* last = l.windows.empty() ? nullptr : &l.windows.back();
    const EvalRecord* e = last_eval(l);
    std::string quality = "&mdash;";
    if (e != nullptr && e->perplexity) quality = "perplexity " + number(*e->perplexity, "{:.3f}");
    if (e != nullptr && e->accuracy) quality = "accuracy " + number(*e->accuracy, "{:.4f}");
    std::string delta = "&mdash;";
    if (e != nullptr && ref_eval != nullptr && &r != ref && e->step == ref_eval->step)
      delta = signed_number(e->loss - ref_eval->loss);
    const std::optional<double> rss = peak_rss(l);
    out += "<tr data-run=\"" + escape(r.label) + "\"><td>" + swatch(r) + " " + escape(r.label) +
           "</td><td>" + (last ? std::to_string(last->step) : "0") + " / " +
           std::to_string(l.run.max_steps) + "</td><td>" +
           std::to_string(last ? last->skipped_steps : 0) + "</td><td>" +
           (last ? number(last->loss) : "&mdash;") + "</td><td>" +
           (e ? number(e->loss) + " <small>(step " + std::to_string(e->step) + ")</small>"
              : "&mdash;") +
           "</td><td>" + quality + "</td><td>" + delta + "</td><td>" + throughput_text(l) +
           "</td><td>" + (rss ? fmt::format("{:.0f} MiB", *rss) : "n/a") + "</td></tr>\n";
  }
  return out + "</table>\n";
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
    const RunLog& l = *runs[i].log;
    std::string steps;
    for (std::size_t k = 0; k < l.skips.size() && k < kMaxSteps; ++k)
      steps += (k ? ", " : "") + std::to_string(l.skips[k].step);
    if (l.skips.size() > kMaxSteps) steps += ", ...";
    out += "<li>" + swatch(runs[i]) + " <b>" + escape(runs[i].label) + "</b>: ";
    out += l.skips.empty()
               ? std::string("no skipped steps")
               : fmt::format("{} skipped step{} (step{} {})", l.skips.size(),
                             l.skips.size() == 1 ? "" : "s", l.skips.size() == 1 ? "" : "s", steps);
    out += "</li>\n";
    for (const SkipRecord& s : l.skips) {
      for (const std::string& p : s.overflowed) {
        std::vector<int>& c = counts[p];
        c.resize(runs.size());
        ++c[i];
      }
    }
  }
  out += "</ul>\n";
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
