#include "mantissa/report/report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "mantissa/error.hpp"
#include "report_parts.hpp"
#include "support/number_text.hpp"

namespace mantissa::report {
namespace {

using plot::escape;

// Print-friendly: black on white, the charts two by two, nothing loaded from elsewhere.
constexpr const char* kStyle = R"(
body { font-family: sans-serif; color: #111; background: #fff; margin: 24px auto; max-width: 1200px; padding: 0 12px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid #bbb; padding-bottom: 3px; }
p, li, figcaption { font-size: 14px; line-height: 1.4; }
.subtitle { color: #333; margin: 0 0 6px; }
.glance { list-style: none; padding: 0; margin: 10px 0; }
.glance li { margin: 3px 0; }
.charts { display: grid; grid-template-columns: repeat(2, 580px); gap: 18px 28px; }
figure { margin: 0; }
figcaption { color: #333; font-size: 12.5px; margin-top: 2px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #aaa; padding: 3px 8px; text-align: right; vertical-align: middle; }
th:first-child, td:first-child { text-align: left; }
th { background: #eee; }
.settings td { text-align: left; }
.swatch { vertical-align: middle; }
.note, footer { color: #444; font-size: 12.5px; }
footer { margin-top: 28px; border-top: 1px solid #bbb; padding-top: 6px; }
)";

std::string job_line(const RunRecord& r) {
  return fmt::format("{}, {} parameters; {} {} per step; {} steps; seed {}{}", r.model,
                     support::grouped(r.parameters), support::grouped(r.items_per_step), r.unit,
                     r.max_steps, r.seed, r.cpu.empty() ? "" : "; on " + r.cpu);
}

// One line per run: the figures a reader looks for first.
std::string glance(const std::vector<detail::ReportRun>& runs) {
  const auto loss = [](const EvalRecord& e) { return e.loss; };
  const detail::ReportRun* ref = detail::reference_run(runs);
  const std::vector<detail::StepSpread> ref_eval =
      ref ? detail::eval_spread(*ref, loss) : std::vector<detail::StepSpread>{};
  std::string out = "<ul class=\"glance\">\n";
  for (const detail::ReportRun& r : runs) {
    std::vector<std::string> parts;  // joined by "; "
    const std::vector<detail::StepSpread> e = detail::eval_spread(r, loss);
    const std::vector<detail::StepSpread> train =
        detail::window_spread(r, [](const WindowRecord& w) { return w.loss; });
    if (!e.empty()) {
      std::string part = "validation loss " + detail::spread_text(e.back().value);
      if (!ref_eval.empty() && &r != ref && e.back().step == ref_eval.back().step) {
        part += fmt::format(" ({:+.4f} against {})",
                            e.back().value.mean - ref_eval.back().value.mean, escape(ref->label));
      }
      parts.push_back(part);
    } else if (!train.empty()) {
      parts.push_back("training loss " + detail::spread_text(train.back().value));
    }
    std::size_t skipped = 0;
    for (const RunLog* l : r.logs) skipped += l->skips.size();
    parts.push_back(fmt::format("{} skipped step{}", skipped, skipped == 1 ? "" : "s"));
    if (r.throughput != nullptr) {
      parts.push_back(detail::rate_text(r.throughput->items_per_second, r.throughput->unit) +
                      " (interleaved)");
    }
    for (const RunLog* l : r.logs) {
      if (!l->outcome || l->outcome->outcome != RunOutcome::completed)
        parts.push_back(escape(outcome_text(*l)));
    }
    std::string line = plot::swatch(r.style) + " <b>" + escape(r.label) + "</b>";
    if (r.seeds() > 1) line += fmt::format(" ({} seeds)", r.seeds());
    for (std::size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? ": " : "; ") + parts[i];
    out += "<li>" + line + "</li>\n";
  }
  return out + "</ul>\n";
}

}  // namespace

std::string render_report(const std::vector<RunLog>& logs, const ReportOptions& options) {
  if (logs.empty()) throw Error("report: no runs to draw");
  const std::vector<detail::ReportRun> runs = detail::report_runs(logs, options);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + escape(options.title) + "</title>\n<style>" + kStyle + "</style>\n";
  out += "</head>\n<body>\n<h1>" + escape(options.title) + "</h1>\n";
  if (!options.subtitle.empty())
    out += "<p class=\"subtitle\">" + escape(options.subtitle) + "</p>\n";
  out += "<p class=\"subtitle\">" + escape(job_line(logs.front().run)) + "</p>\n";
  out += glance(runs);
  out += "<h2>Curves</h2>\n" + detail::charts_section(runs);
  out += "<h2>Final metrics</h2>\n" + detail::final_metrics_table(runs);
  out += "<h2>How the runs ended</h2>\n" + detail::outcomes_section(runs);
  out += "<h2>Mixed-precision settings</h2>\n" + detail::settings_table(runs);
  out +=
      "<h2>Overflows</h2>\n<p>Steps skipped for non-finite gradients, and the parameters "
      "whose gradients held inf or NaN in them.</p>\n" +
      detail::overflow_section(runs);
  out += "<h2>The formats</h2>\n" + detail::formats_table(runs);
  out += "<footer>Drawn by mantissa from";
  for (const RunLog& l : logs) out += " <code>" + escape(l.source) + "</code>";
  out += ". Steps count optimizer steps from 1.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace mantissa::report
