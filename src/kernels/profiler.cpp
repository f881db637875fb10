#include "mantissa/kernels/profiler.hpp"

#include <vector>

namespace mantissa::kernels {
namespace {

using Clock = std::chrono::steady_clock;

struct Frame {
  OpClass c;
  double child_seconds;
};

// Recording state; only the profiling thread touches it.
struct Recorder {
  ProfileTable table{};
  std::vector<Frame> stack;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

thread_local bool t_is_profiling_thread = false;
thread_local Phase t_phase = Phase::forward;

}  // namespace

namespace detail {
std::atomic<bool> g_profiling{false};

void scope_enter(OpClass c, Clock::time_point& start) {
  if (!t_is_profiling_thread) return;
  recorder().stack.push_back(Frame{c, 0.0});
  start = Clock::now();
}

void scope_exit(OpClass c, Clock::time_point start) {
  if (!t_is_profiling_thread) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Recorder& r = recorder();
  if (r.stack.empty()) return;  // started recording inside this scope
  const double child = r.stack.back().child_seconds;
  r.stack.pop_back();
  r.table[static_cast<int>(t_phase)][static_cast<int>(c)] += seconds - child;
  if (!r.stack.empty()) r.stack.back().child_seconds += seconds;
}

Phase set_phase(Phase p) {
  const Phase previous = t_phase;
  t_phase = p;
  return previous;
}
}  // namespace detail

const char* name(OpClass c) {
  static constexpr const char* kNames[kOpClassCount] = {"gemm",           "attention",
                                                        "layer norm",     "softmax / loss",
                                                        "pointwise",      "layout / embedding",
                                                        "convert (H)",    "grad accumulate",
                                                        "optimizer step", "data"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < kOpClassCount ? kNames[i] : "?";
}

const char* name(Phase p) {
  static constexpr const char* kNames[kPhaseCount] = {"forward", "backward", "step"};
  const int i = static_cast<int>(p);
  return i >= 0 && i < kPhaseCount ? kNames[i] : "?";
}

void profiler_start() {
  Recorder& r = recorder();
  r.table = ProfileTable{};
  r.stack.clear();
  t_is_profiling_thread = true;
  detail::g_profiling.store(true);
}

ProfileTable profiler_stop() {
  detail::g_profiling.store(false);
  t_is_profiling_thread = false;
  return recorder().table;
}

}  // namespace mantissa::kernels
