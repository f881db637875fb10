// The op-class profiler: exclusive time, phases, and nothing recorded when off.
#include <gtest/gtest.h>

#include <chrono>

#include "mantissa/kernels/profiler.hpp"

namespace mantissa::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// Spins for about `ms` milliseconds (a sleeping thread would also be "time in the scope",
// but spinning keeps the test independent of the scheduler's wake-up latency).
void busy(double ms) {
  const auto end = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (Clock::now() < end) {
  }
}

double total(const ProfileTable& t) {
  double s = 0;
  for (const auto& phase : t)
    for (double v : phase) s += v;
  return s;
}

double secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Each scope's charge lies between the time measured inside it and the time measured around
// it, so the bounds hold however loaded the machine is (the thread may be preempted anywhere;
// no fixed duration is compared with another).
TEST(Profiler, NestedScopesAreChargedExclusiveTime) {
  profiler_start();
  Clock::time_point t[9];
  t[0] = Clock::now();
  {
    ProfileScope outer(OpClass::gemm);
    t[1] = Clock::now();
    busy(20);
    t[2] = Clock::now();
    {
      ProfileScope inner(OpClass::convert);
      t[3] = Clock::now();
      busy(30);
      t[4] = Clock::now();
    }
    t[5] = Clock::now();
    PhaseScope phase(Phase::backward);
    ProfileScope later(OpClass::attention);
    t[6] = Clock::now();
    busy(10);
    t[7] = Clock::now();
  }
  t[8] = Clock::now();
  const ProfileTable table = profiler_stop();
  const auto at = [&](Phase p, OpClass c) {
    return table[static_cast<int>(p)][static_cast<int>(c)];
  };
  const double convert = at(Phase::forward, OpClass::convert);
  const double attention = at(Phase::backward, OpClass::attention);
  const double gemm = at(Phase::forward, OpClass::gemm);
  EXPECT_GE(convert, secs(t[3], t[4]));
  EXPECT_LE(convert, secs(t[2], t[5]));
  EXPECT_GE(attention, secs(t[6], t[7]));
  EXPECT_LE(attention, secs(t[5], t[8]));
  EXPECT_GE(gemm, secs(t[1], t[2]));
  // Exclusive: the outer scope is not charged its nested scopes' time ...
  EXPECT_LE(gemm, secs(t[0], t[8]) - secs(t[3], t[4]) - secs(t[6], t[7]));
  // ... and together the three cover the outer scope, within the time around it.
  EXPECT_GE(total(table), secs(t[1], t[7]));
  EXPECT_LE(total(table), secs(t[0], t[8]));
  EXPECT_EQ(at(Phase::forward, OpClass::attention), 0.0);  // it ran in the backward phase
  EXPECT_EQ(at(Phase::step, OpClass::optimizer), 0.0);
}

TEST(Profiler, RecordsNothingWhenStopped) {
  profiler_start();
  profiler_stop();
  {
    ProfileScope s(OpClass::pointwise);
    busy(2);
  }
  profiler_start();
  const ProfileTable t = profiler_stop();
  EXPECT_EQ(total(t), 0.0);
  EXPECT_STREQ(name(OpClass::grad_accum), "grad accumulate");
  EXPECT_STREQ(name(Phase::step), "step");
}

}  // namespace
}  // namespace mantissa::kernels
