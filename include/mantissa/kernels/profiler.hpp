#pragma once
// Per-op-class time accounting for `mantissa bench train --profile`.
//
// Code marks its work with a scoped ProfileScope(OpClass). Scopes nest; each class is charged
// its exclusive time (a scope's time minus that of the scopes inside it), split by the phase
// of the training step it ran in (forward, backward, optimizer step). Only the thread that
// enabled the profiler records, so scopes inside parallel regions cost nothing. Disabled (the
// default), a scope is one relaxed atomic load.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace mantissa::kernels {

enum class OpClass : int {
  gemm,          // matrix products (linear, matmul, conv GEMMs)
  attention,     // fused causal attention
  norm,          // layer norm
  softmax_loss,  // softmax, log-softmax, cross-entropy
  pointwise,     // activations, elementwise arithmetic, dropout, bias
  layout,        // reshape / transpose / split / concat / embedding copies
  convert,       // rounding to and from the half format H
  grad_accum,    // the backward engine summing gradients
  optimizer,     // unscale, finite check, norm, clip, parameter update
  data,          // producing the next batch
  count_,
};
enum class Phase : int { forward, backward, step, count_ };

constexpr int kOpClassCount = static_cast<int>(OpClass::count_);
constexpr int kPhaseCount = static_cast<int>(Phase::count_);

const char* name(OpClass c);
const char* name(Phase p);

// Accumulated exclusive seconds per [phase][class].
using ProfileTable = std::array<std::array<double, kOpClassCount>, kPhaseCount>;

// Starts recording on the calling thread (clearing earlier totals); stop returns the totals.
void profiler_start();
ProfileTable profiler_stop();

namespace detail {
extern std::atomic<bool> g_profiling;
void scope_enter(OpClass c, std::chrono::steady_clock::time_point& start);
void scope_exit(OpClass c, std::chrono::steady_clock::time_point start);
Phase set_phase(Phase p);
}  // namespace detail

class ProfileScope {
 public:
  explicit ProfileScope(OpClass c) : class_(c) {
    if (detail::g_profiling.load(std::memory_order_relaxed)) {
      active_ = true;
      detail::scope_enter(c, start_);
    }
  }
  ~ProfileScope() {
    if (active_) detail::scope_exit(class_, start_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  OpClass class_;
  bool active_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Marks the phase of the step for the scopes inside it (restores the previous one on exit).
class PhaseScope {
 public:
  explicit PhaseScope(Phase p) : previous_(detail::set_phase(p)) {}
  ~PhaseScope() { detail::set_phase(previous_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  Phase previous_;
};

}  // namespace mantissa::kernels
