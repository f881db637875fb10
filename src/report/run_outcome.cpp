// How a run ended and what it trained in, in words (report/metrics.hpp): the report's labels
// and tables, and `mantissa compare`'s lines after each run.
#include <fmt/format.h>

#include "mantissa/report/metrics.hpp"

namespace mantissa::report {

std::string precision_name(const RunRecord& r) {
  if (const auto recipe = find_named(precision::kRecipeNames, r.recipe)) {
    return std::string(name_of(precision::kRecipeShortNames, *recipe));
  }
  return r.fp8 ? "fp8" : std::string(numerics::name(r.format));
}

std::string format_label(const RunLog& log) {
  std::string label = precision_name(log.run);
  // A resumed run after a fall-back starts in the format it fell back to: the first record
  // says where it came from.
  if (!log.fallbacks.empty()) {
    label = std::string(numerics::name(log.fallbacks.front().from)) + " \u2192 " +
            std::string(numerics::name(log.fallbacks.back().to));
  }
  return label;
}

std::vector<std::string> fallback_texts(const RunLog& log) {
  std::vector<std::string> out;
  for (const FallbackRecord& f : log.fallbacks) {
    out.push_back(fmt::format("fell back from {} to {} after step {}: {}", numerics::name(f.from),
                              numerics::name(f.to), f.step, f.reason));
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
