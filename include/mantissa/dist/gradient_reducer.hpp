#pragma once
// GradientReducer: averages the parameters' gradients over the ranks, in buckets whose
// all-reduce starts during the backward (through autograd's leaf-ready hook) and overlaps
// the rest of it; finish() waits for the last bucket before the optimizer step.
//
//   dist::GradientReducer reducer(world, model.parameters(), {.wire = WireFormat::bfloat16});
//   autograd::backward(scaled_loss, 1.0f, reducer.hook());  // buckets start as they fill
//   reducer.finish();                                      // every gradient is the average
//
// The all-reduce is a reduce-scatter and an all-gather over point-to-point messages: rank p
// owns part p of every bucket, receives every rank's contribution to it, sums them in rank
// order in float32, multiplies by 1/N once, and sends the result to every rank. Each element
// is computed once, in a fixed order, on one rank: the averaged gradients are the same bits on
// every rank and do not depend on timing or on the order buckets became ready
// (docs/distributed.md).
#include <cstdint>
#include <memory>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/dist/bucketing.hpp"
#include "mantissa/dist/communicator.hpp"
#include "mantissa/dist/reduction.hpp"

namespace mantissa::dist {

struct ReducerOptions {
  // Float32 gradient bytes per bucket (PyTorch DDP's default, 25 MiB).
  std::int64_t bucket_cap_bytes = 25 * 1024 * 1024;
  WireFormat wire = WireFormat::float32;
  // true: the average over the ranks (sum in rank order, times fl(1/N)); false: the sum, for
  // gradients each rank already weighted by 1/N (the trainer seeds its backward with 1/N, so
  // that every rank's backward sees the magnitudes one process would: docs/distributed.md).
  bool average = true;
};

struct ReducerStats {
  std::int64_t buckets = 0;
  std::int64_t bytes_sent_per_step = 0;  // by this rank: (N-1)/N of each bucket, twice
  // The last step: buckets the hook started during the backward, and the time finish() took
  // (the part of the all-reduce the backward did not hide).
  std::int64_t started_during_backward = 0;
  double finish_seconds = 0;
  std::int64_t steps = 0;  // finish() calls
};

class GradientReducer {
 public:
  // Collective: duplicates `comm` (its messages never meet others') and checks that every rank
  // gave the same parameter sizes and options (else mantissa::Error naming the first rank
  // that differs). A parameter listed twice (a tied weight) counts once, at its first place.
  GradientReducer(const Communicator& comm, const std::vector<autograd::Variable>& params,
                  ReducerOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // For autograd::backward: notes each parameter's final gradient and starts a bucket's
  // all-reduce once all of its gradients are final. Pass it to the last backward before
  // finish() only: with gradient accumulation the earlier backwards run without it (a
  // gradient that becomes final twice before finish() is a mantissa::Error).
  autograd::LeafReadyHook hook();
  // Starts every bucket not yet started (a parameter without a gradient sends zeros), waits
  // for all, and leaves every parameter's gradient holding the average (or sum) over the ranks
  // (allocated where it had none). Gradients are float32, or bfloat16 for bfloat16 weights
  // (decoded exactly for the wire; the result rounded back to bfloat16, nearest-even). With one
  // rank: nothing to do, the gradients are untouched. Throws mantissa::Error naming the ranks it
  // waited for when none answered within the communicator's timeout.
  void finish();

  const BucketPlan& plan() const;
  const ReducerStats& stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mantissa::dist
