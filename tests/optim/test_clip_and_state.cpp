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
  // The message shows the value as given, not rounded to six decimals (-1e-9 was "-0.000000").
  try {
    clip_grad_norm_(ps, -1e-9);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "max_gradient_norm: -1e-09 must be > 0");
  }
  try {
    clip_grad_value_(ps, 0.1 + 0.2);
    clip_grad_value_(ps, -(0.1 + 0.2));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "max_gradient_value: -0.30000000000000004 must be > 0");
  }
}

TEST(Optimizer, StepKUsesScheduleValueAtK) {
  Variable p = with_grad({0.0f}, {1.0f});
  ParamGroup g;
  g.params = {p};
  g.learning_rate = lambda([](std::int64_t k) { return static_cast<double>(k + 1); });
  auto sgd = make_optimizer(Sgd{}, {g});
  EXPECT_EQ(sgd->current_learning_rate(), 1.0);
  sgd->step();  // k = 0: lr 1
  sgd->step();  // k = 1: lr 2
  EXPECT_EQ(p.value().to_vector()[0], -3.0f);
  EXPECT_EQ(sgd->step_index(), 2);
  EXPECT_EQ(sgd->current_learning_rate(), 3.0);
}

// The schedule check before the first step samples steps up to max_steps; near INT64_MAX its
// stride once overflowed into "negative step". Every sampled step is in [0, max_steps).
TEST(Optimizer, ScheduleCheckReachesTheLastStepOfAnyRun) {
  Variable p = with_grad({0.0f}, {1.0f});
  ParamGroup g;
  g.params = {p};
  std::int64_t last = -1;
  bool negative = false;
  g.learning_rate = lambda([&](std::int64_t k) {
    negative = negative || k < 0;
    last = std::max(last, k);
    return 0.1;
  });
  auto sgd = make_optimizer(Sgd{}, {g});
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  EXPECT_NO_THROW(sgd->check_schedules(most));
  EXPECT_FALSE(negative);
  EXPECT_EQ(last, most - 1);
}

TEST(Optimizer, GroupsHaveTheirOwnHyperparameters) {
  Variable a = with_grad({1.0f}, {1.0f}), b = with_grad({1.0f}, {1.0f});
  ParamGroup ga, gb;
  ga.params = {a};
  ga.learning_rate = constant(0.1);
  gb.params = {b};
  gb.learning_rate = constant(0.1);
  gb.settings = Sgd{.weight_decay = 1.0};
  auto sgd = make_optimizer(Sgd{}, {ga, gb});
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
    auto opt = make_optimizer(AdamW{}, {g});
    for (int k = 0; k < 6; ++k) {
      if (reload && k == steps_before) {
        const auto state = opt->state_tensors();
        const auto index = opt->step_index();
        opt = make_optimizer(AdamW{}, {g});
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

void expect_error(const OptimizerSettings& s, const std::vector<ParamGroup>& groups,
                  const std::string& fragment) {
  try {
    make_optimizer(s, groups);
    FAIL() << "expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Optimizer, SettingsAreRangeCheckedOnceWithTheFieldNamed) {
  ParamGroup g;
  g.params = {with_grad({1.0f}, {1.0f})};
  g.learning_rate = constant(0.1);
  Adam adam;
  adam.beta1 = 1.0;
  expect_error(adam, {g}, "optimizer adam: beta1: 1 must be in [0, 1)");
  AdamW adamw;
  adamw.eps = -1e-8;
  expect_error(adamw, {g}, "optimizer adamw: eps: -1e-08 must be >= 0");
  expect_error(Sgd{.momentum = 0.0, .nesterov = true}, {g},
               "optimizer sgd: nesterov: needs momentum > 0 and dampening 0");
  Rprop rprop;
  rprop.etaplus = 0.9;
  expect_error(rprop, {g}, "optimizer rprop: etaplus: 0.9 must be > 1");
  rprop = Rprop{};
  rprop.step_size_min = 100;
  expect_error(rprop, {g}, "step_size_min: 100 must be <= step_size_max (50)");
  ParamGroup own = g;
  own.settings = Sgd{.weight_decay = -1.0};  // a group's own settings are checked too
  expect_error(Sgd{}, {own}, "optimizer sgd: weight_decay: -1 must be >= 0");
  own.settings = Adam{};
  expect_error(Sgd{}, {own}, "parameter group 0 has settings of adam");
}

TEST(Optimizer, TheNamesComeFromTheSettingsTypes) {
  const std::vector<std::string_view> names = optimizer_names();
  EXPECT_EQ(names.size(), 15u);
  for (std::string_view n :
       {"sgd", "asgd", "adam", "adamw", "adamax", "nadam", "radam", "lamb", "adagrad", "adadelta",
        "rmsprop", "rprop", "lion", "adafactor", "muon"}) {
    const std::optional<OptimizerSettings> s = default_settings(n);
    ASSERT_TRUE(s) << n;
    EXPECT_EQ(optimizer_name(*s), n);
  }
  EXPECT_FALSE(default_settings("adamm"));
  // The defaults are the vendor's (docs/compatibility.md, optimizers): eps 1e-6
  // for Adam, AdamW, Adamax, Adagrad, RAdam and Lamb, 1e-8 for NAdam and RMSprop; no weight
  // decay but Muon's 0.01; Lamb without bias correction; each its own learning rate.
  auto get = [](std::string_view n) { return *default_settings(n); };
  EXPECT_EQ(std::get<AdamW>(get("adamw")).weight_decay, 0.0);
  EXPECT_EQ(std::get<AdamW>(get("adamw")).eps, 1e-6);
  EXPECT_TRUE(std::get<AdamW>(get("adamw")).bias_correction);
  EXPECT_FALSE(std::get<AdamW>(get("adamw")).amsgrad);
  EXPECT_EQ(std::get<Adam>(get("adam")).eps, 1e-6);
  EXPECT_EQ(std::get<Adamax>(get("adamax")).eps, 1e-6);
  EXPECT_EQ(std::get<Adagrad>(get("adagrad")).eps, 1e-6);
  EXPECT_EQ(std::get<RAdam>(get("radam")).eps, 1e-6);
  EXPECT_EQ(std::get<NAdam>(get("nadam")).eps, 1e-8);
  EXPECT_EQ(std::get<RmsProp>(get("rmsprop")).eps, 1e-8);
  EXPECT_EQ(std::get<Lamb>(get("lamb")).eps, 1e-6);
  EXPECT_FALSE(std::get<Lamb>(get("lamb")).bias_correction);
  EXPECT_EQ(std::get<Lion>(get("lion")).beta2, 0.99);
  EXPECT_EQ(std::get<Rprop>(get("rprop")).etaplus, 1.2);
  EXPECT_EQ(std::get<Rprop>(get("rprop")).step_size_max, 50.0);
  const Muon muon = std::get<Muon>(get("muon"));
  EXPECT_EQ(muon.momentum, 0.95);
  EXPECT_EQ(muon.weight_decay, 0.01);
  EXPECT_TRUE(muon.nesterov);
  EXPECT_EQ(muon.ns_steps, 5);
  EXPECT_TRUE(std::get<Adafactor>(get("adafactor")).scale_parameter);
  EXPECT_FALSE(std::get<Adafactor>(get("adafactor")).relative_step);
  const std::pair<std::string_view, double> rates[] = {
      {"adam", 1e-3},  {"adamw", 1e-3},   {"adadelta", 1.0}, {"adagrad", 1e-2}, {"adamax", 1e-3},
      {"asgd", 1e-2},  {"lamb", 1e-3},    {"lion", 1e-4},    {"muon", 0.02},    {"nadam", 2e-3},
      {"radam", 1e-3}, {"rmsprop", 1e-2}, {"rprop", 1e-3}};
  for (const auto& [n, lr] : rates) EXPECT_EQ(default_learning_rate(get(n)), lr) << n;
}

}  // namespace
}  // namespace mantissa::optim
