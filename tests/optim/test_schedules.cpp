// Every schedule against its closed form, computed by hand at step 0, milestones,
// total_iters and beyond; composed schedules hand over at the right steps.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "mantissa/error.hpp"
#include "mantissa/optim/schedule.hpp"

namespace mantissa::optim {
namespace {

constexpr double kPi = std::numbers::pi;

void expect_at(const SchedulePtr& s, std::int64_t step, double want) {
  EXPECT_NEAR(s->value(step), want, 1e-12 * std::max(1.0, std::fabs(want)))
      << s->describe() << " at step " << step;
}

TEST(Schedules, ConstantLinearPolynomial) {
  expect_at(constant(0.3), 0, 0.3);
  expect_at(constant(0.3), 1000000, 0.3);
  const auto lin = linear(0.0, 1.0, 10);
  expect_at(lin, 0, 0.0);
  expect_at(lin, 3, 0.3);
  expect_at(lin, 10, 1.0);
  expect_at(lin, 50, 1.0);  // held after total_iters
  const auto poly = polynomial(1.0, 0.1, 10, 2.0);
  expect_at(poly, 0, 1.0);
  expect_at(poly, 5, 0.9 * 0.25 + 0.1);
  expect_at(poly, 10, 0.1);
  expect_at(poly, 11, 0.1);
  const auto cyc = polynomial(1.0, 0.0, 10, 1.0, true);
  expect_at(cyc, 15, 1.0 - 15.0 / 20.0);  // second cycle: T = 20
}

TEST(Schedules, ExponentialAndInverseDecays) {
  expect_at(exponential(1.0, 10, 0.5), 5, std::pow(0.5, 0.5));
  expect_at(exponential(1.0, 10, 0.5, true), 5, 1.0);
  expect_at(exponential(1.0, 10, 0.5, true), 10, 0.5);
  expect_at(exponential(1.0, 10, 0.5, true), 29, 0.25);
  expect_at(inverse_exponential_time_decay(1.0, 1.0, 10, 0.5), 20, 1.0 / (1.0 + 0.5 * 2.0));
  expect_at(inverse_exponential_time_decay(1.0, 2.0, 10, 1.0, true), 4, 1.0 / (1.0 + 1.0));
  expect_at(inverse_square_root_decay(2.0, 1.0, 4), 0, 1.0);  // max(step, 4) = 4
  expect_at(inverse_square_root_decay(2.0, 1.0, 4), 16, 0.5);
}

TEST(Schedules, Cosines) {
  const auto cd = cosine_decay(1.0, 0.1, 100);
  expect_at(cd, 0, 1.0);
  expect_at(cd, 50, 0.1 + 0.9 * 0.5);
  expect_at(cd, 100, 0.1);
  expect_at(cd, 150, 0.1);
  const auto ca = cosine_annealing(1.0, 10, 0.0);
  expect_at(ca, 10, 0.0);
  expect_at(ca, 20, 1.0);  // periodic, as PyTorch's closed form
  const auto wr = cosine_annealing_warm_restarts(1.0, 10, 2, 0.0);
  expect_at(wr, 0, 1.0);
  expect_at(wr, 5, 0.5);
  expect_at(wr, 10, 1.0);  // restart; the next cycle lasts 20
  expect_at(wr, 20, 0.5);
  expect_at(wr, 30, 1.0);  // restart; the next cycle lasts 40
  expect_at(wr, 31, 0.5 * (1 + std::cos(kPi / 40)));
  const auto wr1 = cosine_annealing_warm_restarts(1.0, 4, 1, 0.2);
  expect_at(wr1, 6, 0.2 + 0.8 * 0.5);
}

TEST(Schedules, StepMultiStepMultiplicative) {
  expect_at(step_decay(1.0, 3, 0.1), 2, 1.0);
  expect_at(step_decay(1.0, 3, 0.1), 3, 0.1);
  expect_at(step_decay(1.0, 3, 0.1), 7, 0.01);
  const auto ms = multi_step(1.0, {2, 5}, 0.5);
  expect_at(ms, 1, 1.0);
  expect_at(ms, 2, 0.5);
  expect_at(ms, 4, 0.5);
  expect_at(ms, 5, 0.25);
  expect_at(ms, 100, 0.25);
  expect_at(multiplicative(2.0, 0.9), 3, 2.0 * 0.729);
}

TEST(Schedules, CyclicModes) {
  // base 0.1, max 1.0, up 4, down 4: cycle length 8.
  const auto tri = cyclic(0.1, 1.0, 4, 4, CyclicMode::triangular);
  expect_at(tri, 0, 0.1);
  expect_at(tri, 2, 0.55);
  expect_at(tri, 4, 1.0);
  expect_at(tri, 6, 0.55);
  expect_at(tri, 8, 0.1);
  const auto tri2 = cyclic(0.1, 1.0, 4, 4, CyclicMode::triangular2);
  expect_at(tri2, 12, 0.1 + 0.9 * 0.5);  // second cycle's peak, halved
  const auto exp = cyclic(0.1, 1.0, 4, 4, CyclicMode::exp_range, 0.9);
  expect_at(exp, 4, 0.1 + 0.9 * std::pow(0.9, 4));
  const auto asym = cyclic(0.0, 1.0, 2, 6);
  expect_at(asym, 2, 1.0);
  expect_at(asym, 5, 0.5);
}

TEST(Schedules, OneCycle) {
  // max 1, 100 steps, pct 0.3: initial 0.04, rises to 1 at step 29, falls to 4e-6 at 99.
  const auto oc = one_cycle(1.0, 100, 0.3, Anneal::cos);
  expect_at(oc, 0, 0.04);
  expect_at(oc, 29, 1.0);
  expect_at(oc, 99, 0.04 / 1e4);
  const double pct = (64.0 - 29.0) / (99.0 - 29.0);
  expect_at(oc, 64, 0.04e-4 + (1.0 - 0.04e-4) / 2 * (std::cos(kPi * pct) + 1));
  const auto lin = one_cycle(1.0, 100, 0.3, Anneal::linear, 25.0, 1e4, true);
  expect_at(lin, 29, 1.0);
  expect_at(lin, 58, 0.04);  // end of the second phase: back to initial
  expect_at(lin, 99, 0.04e-4);
  EXPECT_THROW(oc->value(100), Error);
}

TEST(Schedules, SequentialPiecewiseChainedLambda) {
  // Warm-up 0 -> 1 over 10 steps, then cosine decay restarting its own count at 10.
  const auto warm = sequential({linear(0.0, 1.0, 10), cosine_decay(1.0, 0.0, 20)}, {10});
  expect_at(warm, 5, 0.5);
  expect_at(warm, 9, 0.9);
  expect_at(warm, 10, 1.0);  // the hand-over: cosine at its step 0
  expect_at(warm, 20, 0.5);
  expect_at(warm, 30, 0.0);
  const auto pc = piecewise_constant({1.0, 0.5, 0.1}, {3, 7});
  expect_at(pc, 2, 1.0);
  expect_at(pc, 3, 0.5);
  expect_at(pc, 7, 0.1);
  const auto ch = chained({constant(2.0), step_decay(1.0, 5, 0.5), multiplicative(3.0, 0.9)});
  expect_at(ch, 10, 2.0 * 0.25 * std::pow(0.9, 10));
  expect_at(lambda([](std::int64_t s) { return 1.0 / (1 + s); }), 3, 0.25);
}

TEST(Schedules, BadParametersAreNamed) {
  try {
    linear(1.0, 0.0, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("total_iters"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cyclic(0, 1, 0, 2), Error);  // step_size_up must be > 0
  EXPECT_THROW(sequential({constant(1)}, {5}), Error);
  EXPECT_THROW(cosine_annealing_warm_restarts(1, 10, 0), Error);
  EXPECT_THROW(constant(1)->value(-1), Error);
}

}  // namespace
}  // namespace mantissa::optim
