#pragma once
// Internal: what the trainer says about a run's steps and its end, in its log lines and its
// metrics records (report/metrics.hpp): the line of a skipped step, how a stop of the step
// guard is recorded, a signal's name, and whether another precision_opt_level would compute
// the same bits.
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/report/metrics.hpp"

namespace mantissa::train::detail {

// "skipped step 7: non-finite gradients at loss scale 2^15, first in the backward of linear
// in blocks.3.fc (reached 53 parameters)" where the step's NonfiniteWatch found where the
// backward went non-finite; else "... at loss scale 2^15 in a, b, c, d and 49 more" (at most
// four names: a GPT has dozens of parameters; the metrics record keeps them all); or, for an
// update the guard refused, the tensor it would have made non-finite.
std::string skipped_step_line(std::int64_t step, double loss, const amp::StepReport& r);
// The same for the step the guard stopped the run at (StepGuardError's facts).
std::string skipped_step_line(std::int64_t step, const amp::StepGuardError& e);

// The outcome a stop of the step guard means.
report::RunOutcome outcome_of(amp::GuardStop why);

// The other precision_opt_level values that compute the same bits as `policy` on this run's
// routes (precision::same_bits_opt_levels): for a float16 / cbfloat16 run, every product of H
// must multiply in float32, which is known before any product runs when the route named (or
// every route automatic chooses among here) is an fp32 route, and after, when every product
// routed so far (`routes`) took one.
std::vector<int> same_bits_levels(const precision::Policy& policy, bool attention,
                                  const std::vector<kernels::RouteRecord>& routes);

}  // namespace mantissa::train::detail
