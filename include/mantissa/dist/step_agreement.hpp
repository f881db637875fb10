#pragma once
// Agreement across ranks for the mixed-precision step: one overflow decision and one gradient
// norm everywhere, so every rank skips the same steps, clips by the same coefficient and keeps
// the same loss-scaler state; and a check that a piece of state is the same bytes on every
// rank. Collectives: every rank calls them in the same order.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/dist/communicator.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {

// What each rank's local facts cover.
enum class GradLayout {
  replicated,  // every rank holds the whole (averaged) gradient: the facts must agree
  sharded,     // each rank holds a disjoint part: the facts combine
};

struct StepDecision {
  bool finite = true;                // no rank saw inf or NaN (and, sharded, the sum is finite)
  double sum_squares = 0;            // the global squared L2 norm
  std::vector<int> nonfinite_ranks;  // the ranks that saw inf or NaN, ascending
  double norm() const;
};

// Every rank passes whether its gradients were finite and their sum of squares; every rank
// gets the same decision. Sharded: finite on every rank, sum_squares summed in rank order.
// Replicated: finite on every rank, sum_squares rank 0's, and a finite sum that differs in any
// bit between ranks throws mantissa::Error naming the ranks (the replicas have diverged).
StepDecision agree_on_step(const Communicator& comm, bool finite, double sum_squares,
                           GradLayout layout);

// An error every rank of the job raises together, with the same message (agree_on_success):
// no rank is left waiting in a collective, so every rank can end normally, and the program
// needs to report it once (rank 0).
class JobError : public Error {
 public:
  using Error::Error;
};

// Collective: every rank passes what failed on it ("" when nothing did); when any rank
// failed, every rank throws JobError with the same message: the failure itself when every
// rank failed alike, else "dist: rank r of N: <rank r's failure>" for the first rank r that
// failed (and how many others did). So a setup that fails on some ranks (a missing file, a
// bad batch split) stops every rank at once, before any rank starts work the others cannot
// join.
void agree_on_success(const Communicator& comm, const std::string& failure);

// Throws mantissa::Error "... a mismatch across ranks in <what>: rank 1 differs from rank 0 at
// byte 12 ..." unless `blob` is the same bytes on every rank (the same verdict on every rank).
void require_identical(const Communicator& comm, std::span<const std::byte> blob,
                       std::string_view what);

}  // namespace mantissa::dist
