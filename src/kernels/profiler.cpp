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
  switch (c) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    case OpClass::norm: return "layer norm";
    case OpClass::softmax_loss: return "softmax / loss";
    case OpClass::pointwise: return "pointwise";
    case OpClass::layout: return "layout / embedding";
    case OpClass::convert: return "convert (H)";
    case OpClass::grad_accum: return "grad accumulate";
    case OpClass::optimizer: return "optimizer step";
    case OpClass::data: return "data";
    case OpClass::count_: break;
  }
  return "?";
}

const char* name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::step: return "step";
    case Phase::count_: break;
  }
  return "?";
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
