// The delayed-scaling rule of precision/fp8.hpp, on hand-derived amax sequences: the scale a
// step uses comes from the amaxes of the steps before it (max over the history window, or the
// most recent), divided by 2^margin; zero and non-finite amaxes leave the scale alone.
#include <gtest/gtest.h>

#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/precision/fp8.hpp"

namespace mantissa::precision {
namespace {

constexpr float kE4m3Max = 448.0f, kE5m2Max = 57344.0f;

Fp8Settings settings(int history, AmaxCompute compute, int margin = 0) {
  Fp8Settings s;
  s.enabled = true;
  s.history_length = history;
  s.amax_compute = compute;
  s.margin = margin;
  return s;
}

// Runs one step per amax on the input slot and returns the scale after each step.
std::vector<float> scales_after(Fp8Meta& m, const std::vector<float>& amaxes) {
  std::vector<float> out;
  for (float a : amaxes) {
    m.record(Fp8Slot::input, a, 0, 0);
    m.update();
    out.push_back(m.scale(Fp8Slot::input));
  }
  return out;
}

TEST(Fp8Meta, MaxOverTheHistoryWindow) {
  Fp8Meta m(settings(3, AmaxCompute::max));
  EXPECT_EQ(m.scale(Fp8Slot::input), 1.0f);  // before any step
  // Windows: {2}, {8,2}, {4,8,2}, {1,4,8}, {1,1,4}, {1,1,1}.
  EXPECT_EQ(scales_after(m, {2, 8, 4, 1, 1, 1}),
            (std::vector<float>{kE4m3Max / 2, kE4m3Max / 8, kE4m3Max / 8, kE4m3Max / 8,
                                kE4m3Max / 4, kE4m3Max / 1}));
}

TEST(Fp8Meta, MostRecentAmaxAndMargin) {
  Fp8Meta m(settings(16, AmaxCompute::most_recent, /*margin=*/2));
  EXPECT_EQ(scales_after(m, {2, 8, 4}),
            (std::vector<float>{kE4m3Max / 2 / 4, kE4m3Max / 8 / 4, kE4m3Max / 4 / 4}));
}

TEST(Fp8Meta, ZeroAndNonFiniteAmaxesKeepTheScale) {
  Fp8Meta m(settings(2, AmaxCompute::most_recent));
  EXPECT_EQ(
      scales_after(m, {4, 0, INFINITY, NAN, 2}),
      (std::vector<float>{kE4m3Max / 4, kE4m3Max / 4, kE4m3Max / 4, kE4m3Max / 4, kE4m3Max / 2}));
  // Under max, an inf step does not hold the scale for the window: windows {inf->0, 4}, {8, 0}.
  Fp8Meta w(settings(2, AmaxCompute::max));
  EXPECT_EQ(scales_after(w, {4, INFINITY, 8}),
            (std::vector<float>{kE4m3Max / 4, kE4m3Max / 4, kE4m3Max / 8}));
}

TEST(Fp8Meta, SeveralCastsInOneStepTakeTheLargestAmaxAndAddTheirCounts) {
  Fp8Meta m(settings(4, AmaxCompute::max));
  m.record(Fp8Slot::grad, 3.0f, 1, 2);
  m.record(Fp8Slot::grad, 5.0f, 0, 7);
  m.record(Fp8Slot::grad, 4.0f, 4, 0);
  m.update();
  EXPECT_EQ(m.scale(Fp8Slot::grad), kE5m2Max / 5);  // hybrid: gradients in e5m2
  EXPECT_EQ(m.last_step_counts()[2].overflows, 5);
  EXPECT_EQ(m.last_step_counts()[2].underflows, 9);
  m.update();  // a step without casts: counts back to 0, scale from the window {0, 5}
  EXPECT_EQ(m.last_step_counts()[2].overflows, 0);
  EXPECT_EQ(m.scale(Fp8Slot::grad), kE5m2Max / 5);
}

TEST(Fp8Meta, FormatsFollowTheRecipe) {
  Fp8Settings s = settings(1, AmaxCompute::max);
  EXPECT_EQ(Fp8Meta(s).format(Fp8Slot::grad), Format::float8_e5m2);
  EXPECT_EQ(Fp8Meta(s).format(Fp8Slot::input), Format::float8_e4m3);
  s.recipe = Fp8Recipe::e4m3;
  EXPECT_EQ(Fp8Meta(s).format(Fp8Slot::grad), Format::float8_e4m3);
}

TEST(Fp8Meta, StateRoundTripsAndBadStateIsRefused) {
  Fp8Meta a(settings(3, AmaxCompute::max));
  scales_after(a, {2, 8});
  Fp8Meta b(settings(3, AmaxCompute::max));
  b.set_state(a.history(), a.scales());
  EXPECT_EQ(scales_after(b, {1}), scales_after(a, {1}));
  EXPECT_THROW(b.set_state(std::vector<float>(5), a.scales()), Error);
  EXPECT_THROW(b.set_state(a.history(), {1.0f, -1.0f, 1.0f}), Error);
  EXPECT_THROW(b.set_state(a.history(), {1.0f, NAN, 1.0f}), Error);
}

TEST(Fp8Settings, RangesAreChecked) {
  EXPECT_THROW(Fp8Meta(settings(0, AmaxCompute::max)), Error);
  EXPECT_THROW(Fp8Meta(settings(4, AmaxCompute::max, -1)), Error);
}

}  // namespace
}  // namespace mantissa::precision
