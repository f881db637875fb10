// Clipping against double-precision references; the optimizer's schedule, groups, state
// round trip and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mantissa/error.hpp"
#include "mantissa/optim/clip.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim {
namespace {

using tensor::Shape;
using tensor::Tensor;

Variable with_grad(std::vector<float> value, std::vector<float> grad) {
  Variable v(Tensor::from_vector(value, Shape{static_cast<std::int64_t>(value.size())}), true);
  v.mutable_grad() = Tensor::from_vector(grad, v.shape());
  return v;
}

TEST(Clip, NormMatchesDoubleReferenceAndScales) {
  std::vector<Variable> ps = {with_grad({0, 0, 0}, {3.0f, 0.0f, 4.0f}), with_grad({0}, {12.0f})};
  const double want = 13.0;  // sqrt(9 + 16 + 144)
  EXPECT_DOUBLE_EQ(grad_norm(ps), want);
  EXPECT_DOUBLE_EQ(clip_grad_norm_(ps, 1.0), want);
  const double coef = 1.0 / (13.0 + 1e-6);
  EXPECT_FLOAT_EQ(ps[0].grad().to_vector()[0], static_cast<float>(3.0 * coef));
  EXPECT_FLOAT_EQ(ps[1].grad().to_vector()[0], static_cast<float>(12.0 * coef));
  // Below the threshold nothing changes.
  std::vector<Variable> small = {with_grad({0}, {0.5f})};
  EXPECT_DOUBLE_EQ(clip_grad_norm_(small, 1.0), 0.5);
  EXPECT_EQ(small[0].grad().to_vector()[0], 0.5f);
}

TEST(Clip, NonFiniteNormIsReportedAndNothingChanges) {
  std::vector<Variable> ps = {with_grad({0, 0}, {std::nanf(""), 1.0f}), with_grad({0}, {5.0f})};
  EXPECT_TRUE(std::isnan(clip_grad_norm_(ps, 1.0)));
  EXPECT_EQ(ps[1].grad().to_vector()[0], 5.0f);
  EXPECT_EQ(ps[0].grad().to_vector()[1], 1.0f);
  std::vector<Variable> inf = {with_grad({0}, {std::numeric_limits<float>::infinity()})};
  EXPECT_TRUE(std::isinf(clip_grad_norm_(inf, 1.0)));
}

TEST(Clip, ValueClampsAndValidates) {
  std::vector<Variable> ps = {with_grad({0, 0, 0}, {-3.0f, 0.2f, 7.0f})};
  clip_grad_value_(ps, 1.0);
  EXPECT_EQ(ps[0].grad().to_vector(), (std::vector<float>{-1.0f, 0.2f, 1.0f}));
  EXPECT_THROW(clip_grad_value_(ps, 0.0), Error);
  EXPECT_THROW(clip_grad_norm_(ps, -1.0), Error);
}

TEST(Optimizer, StepKUsesScheduleValueAtK) {
  Variable p = with_grad({0.0f}, {1.0f});
  ParamGroup g;
  g.params = {p};
  g.learning_rate = lambda([](std::int64_t k) { return static_cast<double>(k + 1); });
  auto sgd = make_optimizer("sgd", {g});
  EXPECT_EQ(sgd->current_learning_rate(), 1.0);
  sgd->step();  // k = 0: lr 1
  sgd->step();  // k = 1: lr 2
  EXPECT_EQ(p.value().to_vector()[0], -3.0f);
  EXPECT_EQ(sgd->step_index(), 2);
  EXPECT_EQ(sgd->current_learning_rate(), 3.0);
}

TEST(Optimizer, GroupsHaveTheirOwnHyperparameters) {
  Variable a = with_grad({1.0f}, {1.0f}), b = with_grad({1.0f}, {1.0f});
  ParamGroup ga, gb;
  ga.params = {a};
  ga.learning_rate = constant(0.1);
  gb.params = {b};
  gb.learning_rate = constant(0.1);
  gb.hyperparameters = {{"weight_decay", 1.0}};
  auto sgd = make_optimizer("sgd", {ga, gb});
  sgd->step();
  EXPECT_FLOAT_EQ(a.value().to_vector()[0], 0.9f);
  EXPECT_FLOAT_EQ(b.value().to_vector()[0], 0.8f);  // g + wd * p = 2
}

TEST(Optimizer, StateRoundTripContinuesTheSameTrajectory) {
  auto run = [](int steps_before, bool reload) {
    Variable p = with_grad({1.0f, -2.0f}, {0.0f, 0.0f});
    ParamGroup g;
    g.params = {p};
    g.names = {"w"};
    g.learning_rate = cosine_decay(0.1, 0.0, 10);
    auto opt = make_optimizer("adamw", {g});
    for (int k = 0; k < 6; ++k) {
      if (reload && k == steps_before) {
        const auto state = opt->state_tensors();
        const auto index = opt->step_index();
        opt = make_optimizer("adamw", {g});
        opt->load_state_tensors(state, index);
      }
      const auto v = p.value().to_vector();
      p.mutable_grad() = Tensor::from_vector({v[0] * 0.3f + 0.1f, v[1] - 0.2f}, p.shape());
      opt->step();
    }
    return p.value().to_vector();
  };
  EXPECT_EQ(run(3, false), run(3, true));  // bitwise
}

TEST(Optimizer, ErrorsNameTheProblem) {
  ParamGroup g;
  g.params = {with_grad({1.0f}, {1.0f})};
  g.learning_rate = constant(0.1);
  try {
    make_optimizer("adamm", {g});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'adamm'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("adamw"), std::string::npos);
  }
  g.hyperparameters = {{"beta3", 0.5}};
  try {
    make_optimizer("adam", {g});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'beta3'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(optimizer_names().size(), 14u);
}

}  // namespace
}  // namespace mantissa::optim
