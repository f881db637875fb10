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

TEST(Profiler, NestedScopesAreChargedExclusiveTime) {
  profiler_start();
  const auto t0 = Clock::now();
  {
    ProfileScope outer(OpClass::gemm);
    busy(20);
    {
      ProfileScope inner(OpClass::convert);
      busy(30);
    }
    PhaseScope phase(Phase::backward);
    ProfileScope later(OpClass::attention);
    busy(10);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const ProfileTable t = profiler_stop();
  const auto at = [&](Phase p, OpClass c) { return t[static_cast<int>(p)][static_cast<int>(c)]; };
  // The inner scopes' time is not charged to the outer one; together they cover the wall
  // time of the outer scope (up to the cost of reading the clock).
  EXPECT_GE(at(Phase::forward, OpClass::convert), 0.030);
  EXPECT_GE(at(Phase::backward, OpClass::attention), 0.010);
  EXPECT_GE(at(Phase::forward, OpClass::gemm), 0.020);
  EXPECT_LT(at(Phase::forward, OpClass::gemm), at(Phase::forward, OpClass::convert));
  EXPECT_NEAR(total(t), wall, 0.002);
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
