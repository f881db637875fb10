#include "run_outcome.hpp"

#include "mantissa/train/trainer.hpp"

#include <cmath>
#include <csignal>
#include <cstring>
#include <optional>

#include "support/number_text.hpp"

namespace mantissa::train::detail {
namespace {

std::string some_names(const std::vector<std::string>& names) {
  constexpr std::size_t kNamesShown = 4;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i)
    out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kNamesShown)
    out += " and " + std::to_string(names.size() - kNamesShown) + " more";
  return out;
}

// With the op where the backward first went non-finite, the line names it and counts the
// parameters it reached (usually all of them; the metrics record keeps their names);
// without, it names the parameters.
std::string nonfinite_line(std::int64_t step, const char* what, double scale,
                           const std::vector<std::string>& names,
                           const std::optional<autograd::NonfiniteOrigin>& origin = std::nullopt) {
  std::string line = "skipped step " + std::to_string(step) + ": non-finite " + what +
                     " at loss scale " + support::scale_text(scale);
  const std::size_t n = names.size();
  if (origin) {
    line += ", first in " + autograd::describe(*origin);
    if (n > 0) line += " (reached " + std::to_string(n) + " parameter" + (n == 1 ? ")" : "s)");
  } else if (n > 0) {
    line += " in " + some_names(names);
  }
  return line;
}

std::string refused_line(std::int64_t step, const std::string& tensor) {
  return "skipped step " + std::to_string(step) + ": the update would have made '" + tensor +
         "' non-finite (inf or NaN; the gradients were finite): not applied";
}

}  // namespace

std::string skipped_step_line(std::int64_t step, double loss, const amp::StepReport& r) {
  if (!r.refused_update.empty()) return refused_line(step, r.refused_update);
  return nonfinite_line(step, std::isfinite(loss) ? "gradients" : "loss", r.loss_scale,
                        r.nonfinite_params, r.nonfinite_origin);
}

std::string skipped_step_line(std::int64_t step, const amp::StepGuardError& e) {
  if (e.refused_update() && !e.tensors().empty()) return refused_line(step, e.tensors().front());
  return nonfinite_line(
      step, e.why() == amp::GuardStop::loss_scale_floor ? "gradients" : "loss or gradients",
      e.loss_scale(), e.tensors(), e.first_nonfinite());
}

report::RunOutcome outcome_of(amp::GuardStop why) {
  switch (why) {
    case amp::GuardStop::loss_scale_floor:
      return report::RunOutcome::loss_scale_floor;
    case amp::GuardStop::nonfinite_steps:
      return report::RunOutcome::nonfinite_steps;
  }
  return report::RunOutcome::error;
}

std::vector<int> same_bits_levels(const precision::Policy& policy, bool attention,
                                  const std::vector<kernels::RouteRecord>& routes) {
  const bool fp32 = kernels::takes_fp32_routes(policy.half, policy.matmul_route) ||
                    kernels::took_fp32_routes(policy.half, routes);
  return precision::same_bits_opt_levels(policy, attention, fp32);
}

}  // namespace mantissa::train::detail

namespace mantissa::train {

std::string signal_name(int signo) {
  if (signo == 0) return "";
  const char* abbrev = sigabbrev_np(signo);  // glibc's: "TERM" for SIGTERM
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

}  // namespace mantissa::train
