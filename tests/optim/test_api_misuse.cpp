// The optimizer and schedule API under mistaken use (the library audit of 2026-11-28,
// docs/reliability.md): every case throws mantissa::Error naming what is wrong, before
// anything changes, instead of crashing, hanging or running on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "error_of.hpp"
#include "mantissa/error.hpp"
#include "mantissa/optim/optimizer.hpp"
#include "mantissa/optim/schedule.hpp"

namespace mantissa::optim {
namespace {

using tensor::Shape;
using tensor::Tensor;
using testing::error_of;

Variable param(std::int64_t n, float value = 1.0f) {
  Variable p(Tensor::full(Shape{n}, value), true);
  p.mutable_grad() = Tensor::full(Shape{n}, 0.5f);
  return p;
}

TEST(OptimizerMisuse, AGradientOfAnotherShapeIsRefusedBeforeAnyUpdate) {
  Variable a = param(4), b = param(1 << 16);
  b.mutable_grad() = Tensor::full(Shape{1}, 0.5f);  // the wrong shape: once a crash
  auto opt = make_optimizer(AdamW{}, {a, b}, 1e-3);
  const std::string e = error_of([&] { opt->step(); });
  EXPECT_NE(e.find("gradient of 'group0.param1' has shape [1], the parameter [65536]"),
            std::string::npos)
      << e;
  EXPECT_EQ(a.value().to_vector(), std::vector<float>(4, 1.0f));  // a was not updated either
  EXPECT_EQ(opt->step_index(), 0);
}

TEST(OptimizerMisuse, LoadedStateOfTheWrongShapeOrForNoParameterIsRefused) {
  Variable p = param(1 << 16);
  auto opt = make_optimizer(AdamW{}, {p}, 1e-3);
  ASSERT_TRUE(opt->step());
  const std::map<std::string, Tensor> good = opt->state_tensors();
  std::map<std::string, Tensor> bad = good;
  bad["group0.param0.exp_avg"] = Tensor::zeros(Shape{1});  // once a crash at the next step
  std::string e = error_of([&] { opt->load_state_tensors(bad, 1); });
  EXPECT_NE(e.find("state 'group0.param0.exp_avg' has shape [1], expected [65536]"),
            std::string::npos)
      << e;
  bad = good;
  bad["group0.param7.exp_avg"] = Tensor::zeros(Shape{3});
  e = error_of([&] { opt->load_state_tensors(bad, 1); });
  EXPECT_NE(e.find("state 'group0.param7.exp_avg' belongs to no parameter"), std::string::npos)
      << e;
  e = error_of([&] { opt->load_state_tensors(good, -5); });
  EXPECT_NE(e.find("step index -5 (expected >= 0)"), std::string::npos) << e;
  // Each refusal left the optimizer as it was: its state and step go on.
  EXPECT_EQ(opt->step_index(), 1);
  for (const auto& [name, t] : opt->state_tensors()) {
    EXPECT_EQ(t.to_vector(), good.at(name).to_vector()) << name;
  }
  ASSERT_TRUE(opt->step());
}

TEST(OptimizerMisuse, AParameterOrANameListedTwiceIsRefused) {
  Variable p = param(2), q = param(3);
  std::string e = error_of([&] { make_optimizer(Sgd{}, {p, q, p}, 0.1); });
  EXPECT_NE(e.find("parameter 2 of group 0 is parameter 0 of group 0 again"), std::string::npos)
      << e;
  ParamGroup g;
  g.params = {p, q};
  g.names = {"w", "w"};
  g.learning_rate = constant(0.1);
  e = error_of([&] { make_optimizer(AdamW{}, {g}); });
  EXPECT_NE(e.find("are both named 'w'"), std::string::npos) << e;
  e = error_of([&] { make_optimizer(Sgd{}, {p, Variable()}, 0.1); });
  EXPECT_NE(e.find("parameter 1 of group 0 is undefined"), std::string::npos) << e;
  auto opt = make_optimizer(Sgd{}, {p}, 0.1);
  e = error_of([&] { opt->learning_rate_at(0, 5); });
  EXPECT_NE(e.find("no parameter group 5 (it has 1)"), std::string::npos) << e;
}

TEST(OptimizerMisuse, MuonStepsAnEmptyMatrix) {
  // A [0, 4] matrix: no rows to orthogonalize (once a division by zero).
  Variable p(Tensor::zeros(Shape{0, 4}), true);
  p.mutable_grad() = Tensor::zeros(Shape{0, 4});
  auto opt = make_optimizer(Muon{}, {p}, 0.1);
  EXPECT_TRUE(opt->step());
  EXPECT_EQ(p.shape(), (Shape{0, 4}));
}

// CosineAnnealingWarmRestarts by the definition: walk the cycles one by one (small steps only).
double warm_restarts_by_walking(double initial, std::int64_t t0, std::int64_t mult,
                                std::int64_t s) {
  std::int64_t t_i = t0, t_cur = s;
  while (t_cur >= t_i) {
    t_cur -= t_i;
    t_i *= mult;
  }
  return initial *
         (1.0 +
          std::cos(std::numbers::pi * static_cast<double>(t_cur) / static_cast<double>(t_i))) /
         2.0;
}

TEST(ScheduleMisuse, WarmRestartsAnswerAtOnceForAnyStep) {
  for (const auto& [t0, mult] : {std::pair{3, 1}, std::pair{2, 3}, std::pair{1, 2}}) {
    const SchedulePtr s = cosine_annealing_warm_restarts(1.0, t0, mult);
    for (std::int64_t k = 0; k < 300; ++k) {
      EXPECT_DOUBLE_EQ(s->value(k), warm_restarts_by_walking(1.0, t0, mult, k))
          << "T_0 " << t0 << " T_mult " << mult << " step " << k;
    }
  }
  constexpr std::int64_t kLast = std::numeric_limits<std::int64_t>::max();
  // T_0 3: 2^63 - 1 = 3 * 3074457345618258602 + 1, one step into its cycle: (1 + cos(pi/3)) / 2.
  EXPECT_DOUBLE_EQ(cosine_annealing_warm_restarts(1.0, 3, 1)->value(kLast), 0.75);
  // T_0 1, T_mult 2: cycles 1, 2, ..., 2^62 end exactly at step 2^63 - 2; the last step starts
  // the next cycle (once a loop of 2^63 iterations, and an overflow to NaN).
  EXPECT_DOUBLE_EQ(cosine_annealing_warm_restarts(1.0, 1, 2)->value(kLast), 1.0);
  const double far = cosine_annealing_warm_restarts(1.0, 10, std::int64_t{1} << 40)->value(kLast);
  EXPECT_TRUE(std::isfinite(far) && far >= 0.0 && far <= 1.0) << far;
}

TEST(ScheduleMisuse, NullSchedulesAndEmptyFunctionsAreRefused) {
  std::string e = error_of([&] { sequential({nullptr, constant(2)}, {3}); });
  EXPECT_NE(e.find("schedule 0 is null"), std::string::npos) << e;
  e = error_of([&] { chained({constant(1), nullptr}); });
  EXPECT_NE(e.find("schedule 1 is null"), std::string::npos) << e;
  e = error_of([&] { lambda(nullptr); });
  EXPECT_NE(e.find("needs a function"), std::string::npos) << e;
}

// Once the optimizer refused these only at its first step (after the run had started).
TEST(ScheduleMisuse, NonFiniteArgumentsAreRefusedWhenTheScheduleIsMade) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error_of([&] { constant(nan); }),
            "schedule Constant: value is nan (expected a finite number)");
  EXPECT_EQ(error_of([&] { linear(1.0, -inf, 10); }),
            "schedule Linear: end is -inf (expected a finite number)");
  EXPECT_EQ(error_of([&] { cosine_annealing(1.0, 10, nan); }),
            "schedule CosineAnnealing: eta_min is nan (expected a finite number)");
  EXPECT_EQ(error_of([&] { step_decay(1.0, 5, inf); }),
            "schedule Step: gamma is inf (expected a finite number)");
  EXPECT_EQ(error_of([&] { polynomial(1.0, 0.0, 10, nan); }),
            "schedule Polynomial: power is nan (expected a finite number)");
  EXPECT_EQ(error_of([&] {
              piecewise_constant({1.0, nan}, {4});
            }),
            "schedule PiecewiseConstant: value 1 is nan (expected a finite number)");
  EXPECT_EQ(error_of([&] { scaled(constant(1.0), inf); }),
            "schedule Scaled: factor is inf (expected a finite number)");
  EXPECT_EQ(error_of([&] { cyclic(0.1, nan, 4); }),
            "schedule Cyclic: max_lr is nan (expected a finite number)");
  EXPECT_EQ(error_of([&] { one_cycle(1.0, 100, 0.3, Anneal::cos, 0.0); }),
            "schedule OneCycle: div_factor and final_div_factor must be > 0 (got 0 and 10000)");
  EXPECT_EQ(error_of([&] { one_cycle(1.0, 100, 0.3, static_cast<Anneal>(5)); }),
            "schedule OneCycle: anneal_strategy 5 is not an Anneal");
  EXPECT_EQ(error_of([&] { cyclic(0.1, 1.0, 4, 0, static_cast<CyclicMode>(3)); }),
            "schedule Cyclic: mode 3 is not a CyclicMode");
  // Finite values, negative ones included (a schedule may go below zero), are taken.
  EXPECT_DOUBLE_EQ(linear(1.0, -1.0, 4)->value(2), 0.0);
}

}  // namespace
}  // namespace mantissa::optim
