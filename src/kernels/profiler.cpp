#include "mantissa/kernels/profiler.hpp"

#include <vector>

#include "mantissa/names.hpp"

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

// The words of the profile's rows and columns, one per value, in enum order (checked below).
constexpr NameTable<OpClass, kOpClassCount> kOpClassNames = {{
    {"gemm", OpClass::gemm},
    {"attention", OpClass::attention},
    {"layer norm", OpClass::norm},
    {"softmax / loss", OpClass::softmax_loss},
    {"pointwise", OpClass::pointwise},
    {"layout / embedding", OpClass::layout},
    {"convert (H)", OpClass::convert},
    {"grad accumulate", OpClass::grad_accum},
    {"optimizer step", OpClass::optimizer},
    {"data", OpClass::data},
}};
static_assert(in_enum_order(kOpClassNames, kOpClassCount));
constexpr NameTable<Phase, kPhaseCount> kPhaseNames = {{
    {"forward", Phase::forward},
    {"backward", Phase::backward},
    {"step", Phase::step},
}};
static_assert(in_enum_order(kPhaseNames, kPhaseCount));

// The names are string literals: their views end in a NUL.
const char* name(OpClass c) {
  return name_of(kOpClassNames, c).data();
}

const char* name(Phase p) {
  return name_of(kPhaseNames, p).data();
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
