// How a run ended and what it trained in, in words (report/metrics.hpp): the report's labels
// and tables, and `mantissa compare`'s lines after each run.
#include <fmt/format.h>

#include <algorithm>

#include "mantissa/report/metrics.hpp"

namespace mantissa::report {

std::string precision_name(const RunRecord& r) {
  if (const auto recipe = find_named(precision::kRecipeNames, r.recipe)) {
    return std::string(name_of(precision::kRecipeShortNames, *recipe));
  }
  return r.fp8 ? "fp8" : std::string(numerics::name(r.format));
}

namespace {

// The precisions a run trained in, in step order: the one it started in, then each one a
// fall-back or a resume in another precision continued in.
std::vector<std::string> precision_story(const RunLog& log) {
  struct Turn {
    std::int64_t step;
    std::string from, to;
  };
  std::vector<Turn> turns;
  for (const FallbackRecord& f : log.fallbacks) {
    turns.push_back(
        {f.step, std::string(numerics::name(f.from)), std::string(numerics::name(f.to))});
  }
  for (const SettingsChange& c : log.settings_changes) {
    if (!c.changed.empty() && c.changed.front().name == kPrecisionChange) {
      turns.push_back({c.step, c.changed.front().before, c.changed.front().after});
    }
  }
  std::stable_sort(turns.begin(), turns.end(),
                   [](const Turn& a, const Turn& b) { return a.step < b.step; });
  std::vector<std::string> story{turns.empty() ? precision_name(log.run) : turns.front().from};
  for (const Turn& t : turns) {
    if (t.to != story.back()) story.push_back(t.to);
  }
  return story;
}

}  // namespace

std::string format_label(const RunLog& log) {
  std::string label;
  for (const std::string& p : precision_story(log)) {
    label += (label.empty() ? "" : " \u2192 ") + p;
  }
  return label;
}

std::string start_precision(const RunLog& log) {
  return precision_story(log).front();
}

std::vector<std::string> fallback_texts(const RunLog& log) {
  std::vector<std::string> out;
  for (const FallbackRecord& f : log.fallbacks) {
    out.push_back(fmt::format("fell back from {} to {} after step {}: {}", numerics::name(f.from),
                              numerics::name(f.to), f.step, f.reason));
  }
  return out;
}

std::vector<std::string> settings_change_texts(const RunLog& log) {
  std::vector<std::string> out;
  for (const SettingsChange& c : log.settings_changes) {
    std::string text = fmt::format("resumed at step {} in other settings: ", c.step);
    for (std::size_t i = 0; i < c.changed.size(); ++i) {
      const ChangedSetting& s = c.changed[i];
      text += fmt::format("{}{} {} \u2192 {}", i > 0 ? ", " : "", s.name, s.before, s.after);
    }
    out.push_back(text);
  }
  return out;
}

std::string outcome_text(const RunLog& log) {
  if (!log.outcome) {
    return "no end recorded (still running, killed without a chance to record it, or written "
           "by an older mantissa)";
  }
  const OutcomeRecord& o = *log.outcome;
  const std::string at = fmt::format("at step {} of {}", o.step, log.run.max_steps);
  const std::string last =
      o.last_skipped_step ? fmt::format("; last skipped step {}", *o.last_skipped_step) : "";
  const std::string why = o.message.empty() ? "" : ": " + o.message;
  switch (o.outcome) {
    case RunOutcome::completed:
      return fmt::format("completed {} steps ({} skipped{})", o.step, o.skipped_steps, last);
    case RunOutcome::loss_scale_floor:
      return "stopped at the loss-scale floor " + at + " (" + std::to_string(o.skipped_steps) +
             " skipped" + last + ")" + why;
    case RunOutcome::nonfinite_steps:
      return "stopped for non-finite steps " + at + " (" + std::to_string(o.skipped_steps) +
             " skipped" + last + ")" + why;
    case RunOutcome::interrupted:
      return "interrupted" + (o.signal.empty() ? std::string() : " by " + o.signal) + " " + at +
             (o.checkpoint.empty() ? std::string() : " (checkpoint " + o.checkpoint + ")");
    case RunOutcome::error:
      return "failed " + at + why;
  }
  return "";
}

}  // namespace mantissa::report
