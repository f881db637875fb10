// The vendor's scheduler classes (tests/train/compat/schedulers.yaml), each as *LR and *WD,
// against their closed forms (the vendor's scheduler documentation) computed by hand; parameter
// groups and param_group_tags (compat/param_groups.yaml) against the vendor's rules.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "param_groups.hpp"
#include "vendor_configs.hpp"

namespace mantissa::train {
namespace {

using config::SchedulerConfig;

constexpr double kPi = std::numbers::pi;

// The learning-rate and weight-decay schedulers of document `doc`.
struct Pair {
  TrainerConfig c;
  explicit Pair(std::size_t doc) : c(compat_config("schedulers.yaml", doc)) {}
  double lr(std::int64_t k) const { return of(ScheduledKey::learning_rate, k); }
  double wd(std::int64_t k) const { return of(ScheduledKey::weight_decay, k); }
  double of(ScheduledKey key, std::int64_t k) const {
    for (const SchedulerConfig& s : c.schedulers) {
      if (s.key == key) return s.schedule->value(k);
    }
    ADD_FAILURE() << "no scheduler for the key";
    return 0;
  }
};

void near(double got, double want) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::fabs(want)));
}

// A value of document `doc`'s scheduler of `key` at `step`, and what the closed form gives.
struct Expected {
  std::size_t doc;
  ScheduledKey key;
  std::int64_t step;
  double value;
};
constexpr ScheduledKey kLr = ScheduledKey::learning_rate;
constexpr ScheduledKey kWd = ScheduledKey::weight_decay;

TEST(VendorSchedules, EveryClassAndItsWeightDecayTwin) {
  const Expected cases[] = {
      {0, kLr, 7, 0.1},                       // ConstantLR
      {0, kWd, 7, 0.01},                      // ConstantWD
      {1, kLr, 3, 0.3},                       // LinearLR 0 -> 1 over 10
      {1, kWd, 5, 0.05},                      // LinearWD 0.1 -> 0 over 10
      {2, kLr, 5, 0.9 * 0.25 + 0.1},          // (1 - 0.1)(1 - 5/10)^2 + 0.1
      {2, kWd, 1, 0.75},                      // (1 - 1/4)^1
      {3, kLr, 15, 0.5},                      // staircase: 0.5^floor(1.5)
      {3, kWd, 5, 0.1 * std::pow(0.5, 0.5)},  // 0.1 * 0.5^(5/10)
      {4, kLr, 10, 1.0 / (1.0 + 0.5 * 1.0)},  // 1 / (1 + 0.5 * 10^1 / 10)
      {4, kWd, 4, 0.2 / (1.0 + 1.0)},         // staircase: floor(4^2 / 10) = 1
      {5, kLr, 1, 2.0 / 2.0},                 // 2 / sqrt(max(1, 4))
      {5, kWd, 4, 0.1 * 2.0 / 2.0},           // 0.1 * 2 / sqrt(4)
      {6, kLr, 50, 0.1 + 0.9 * 0.5},          // halfway down the cosine
      {6, kWd, 100, 0.0},                     // its end
      {7, kLr, 5, 0.5},                       // cos(pi/2): halfway
      {7, kWd, 10, 0.01},                     // eta_min at T_max
      {8, kLr, 15, 0.5},                      // restarted at 10: 5 of 10
      {8, kWd, 6, 0.05},                      // T_0 4: 2 steps into the second cycle
      {9, kLr, 7, 0.25},                      // 0.5^floor(7/3)
      {9, kWd, 3, 0.01},                      // 0.1 * 0.1^floor(3/2)
      {10, kLr, 5, 0.01},                     // two milestones passed: 0.1^2
      {10, kWd, 1, 0.05},                     // one: 0.1 * 0.5
      {11, kLr, 2, 0.81},                     // 0.9^2
      {11, kWd, 3, 0.0125},                   // 0.1 * 0.5^3
      {16, kLr, 2, 2.0 * 0.25},               // 2 * (0.5^2 / 1)
      {16, kWd, 2, 0.1 * 0.5},                // 0.1 * (step(2) / step(0))
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE("document " + std::to_string(e.doc) + " step " + std::to_string(e.step));
    near(Pair(e.doc).of(e.key, e.step), e.value);
  }
}

TEST(VendorSchedules, ChainedSchedulerIsChainedLR) {
  const TrainerConfig alias = compat_config("schedulers.yaml", 17);
  ASSERT_EQ(alias.schedulers.size(), 1u);
  near(alias.schedulers[0].schedule->value(9), 1.0);
}

TEST(VendorSchedules, CyclicWithScaleMode) {
  // CyclicLR base 0.1, max 1, up 4, down 2 (total 6, ratio 2/3), triangular2: amplitude
  // halves each cycle. scale_mode: iterations changes nothing (the mode decides, as the
  // vendor's set_scale_fn does).
  Pair c(12);
  near(c.lr(0), 0.1);
  near(c.lr(4), 1.0);
  near(c.lr(6), 0.1);
  near(c.lr(10), 0.1 + 0.9 * 0.5);  // second cycle's peak, halved
  near(c.lr(5), 0.1 + 0.9 * 0.5);   // halfway down: x = 5/6, (x - 1) / (2/3 - 1) = 1/2
  // CyclicWD exp_range, gamma 0.99, step_size_up 2000 (the default), down = up: at 1000 a
  // quarter of the cycle, scale 1/2, times 0.99^1000 (per iteration whatever scale_mode).
  near(c.wd(1000), 0.1 * 0.5 * std::pow(0.99, 1000));
  for (const char* mode : {"cycle", "iterations"}) {
    const TrainerConfig other =
        compat_config("schedulers.yaml", 12,
                      {std::string("trainer.init.schedulers[0].CyclicLR.scale_mode=") + mode});
    near(other.schedulers[0].schedule->value(10), 0.55);
  }
}

TEST(VendorSchedules, OneCycleWithFinalDivFactor) {
  // linear, initial 0.04, max 1, 100 steps, pct 0.25: up until step 24, down to
  // 0.04 / 1e4 at step 99.
  Pair c(13);
  near(c.lr(0), 0.04);
  near(c.lr(12), 0.04 + 0.5 * 0.96);
  near(c.lr(24), 1.0);
  near(c.lr(99), 4e-6);
  // OneCycleWD: cos, total_steps 1000 (default), pct 0.3: the peak at step 299.
  near(c.wd(0), 0.01);
  near(c.wd(299), 0.1);
  near(c.wd(999), 0.01 / 1e4);
}

TEST(VendorSchedules, SequentialWithoutMilestonesRunsEachForItsTotalIters) {
  // The vendor's BERT example: LinearLR 0 -> 1e-5 over 2000, then ConstantLR 1e-5.
  Pair c(14);
  near(c.lr(1000), 0.5e-5);
  near(c.lr(2000), 1e-5);
  near(c.lr(5000), 1e-5);
  // SequentialWD with milestones [3]: the linear part starts at step 3 from its step 0.
  near(c.wd(2), 0.0);
  near(c.wd(8), 0.05);
  // SequentialLR with milestones [4]: the cosine starts at step 4 from its own step 0.
  const TrainerConfig m = compat_config("schedulers.yaml", 18);
  near(m.schedulers[0].schedule->value(3), 0.5);
  near(m.schedulers[0].schedule->value(9), 0.5);  // cosine at 5 of T_max 10
  Pair piecewise(15);
  near(piecewise.lr(2), 1.0);
  near(piecewise.lr(3), 0.5);
  near(piecewise.lr(6), 0.1);
  near(piecewise.wd(5), 0.1);
}

void expect_error(const std::string& file, std::size_t doc, const std::vector<std::string>& set,
                  const std::string& fragment) {
  try {
    const TrainerConfig c = compat_config(file, doc, set);
    nn::Mlp model(c.model.mlp, c.seed);
    build_param_groups(c, model.named_parameters());
    FAIL() << "expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(VendorSchedules, SchedulerMisusesAreRefusedByName) {
  const std::string at = "trainer.init.schedulers";
  expect_error(
      "schedulers.yaml", 14,
      {at + "[0].SequentialLR.schedulers[0]={CosineAnnealingLR: {initial_learning_rate: 1, "
            "T_max: 10}}"},
      "SequentialLR.milestones: missing, and schedulers[0] has no total_iters");
  expect_error("schedulers.yaml", 14, {at + "[0].SequentialLR.last_epoch=5"},
               "last_epoch: only -1");
  expect_error("schedulers.yaml", 14,
               {at + "[0].SequentialLR.schedulers[1]={ConstantWD: {val: 1}}"},
               "ConstantWD drives weight_decay, but the scheduler it is nested in drives lr");
  expect_error("schedulers.yaml", 14,
               {at + "[0].SequentialLR.schedulers[1].ConstantLR.param_group_tags=x"},
               "param_group_tags: set it on the outer scheduler");
  expect_error("schedulers.yaml", 0, {at + "[1]={LambdaLR: {initial_learning_rate: 1}}"},
               "LambdaLR is not accepted: a lambda is code");
  expect_error("schedulers.yaml", 12, {at + "[0].CyclicLR.scale_mode=cycles"},
               "CyclicLR.scale_mode: 'cycles' (expected one of: cycle, iterations)");
  // Two schedulers of one key: each needs tags, and no tag in common.
  expect_error(
      "schedulers.yaml", 0, {at + "[1]={ConstantLR: {learning_rate: 1}}"},
      "trainer.init.schedulers[0] (ConstantLR) and trainer.init.schedulers[1] (ConstantLR) "
      "both drive lr: schedulers of one key need param_group_tags");
  expect_error("param_groups.yaml", 0, {at + "[1].ConstantLR.param_group_tags=[null, first]"},
               "both drive lr of the groups tagged first");
}

// The MLP's groups from compat/param_groups.yaml: (layers.0.weight) tagged first,
// (layers.0.bias) first + no_decay, (layers.1.weight) untagged, (layers.1.bias) no_decay.
TEST(VendorSchedules, ParameterGroupsTagsAndPerGroupSettings) {
  const TrainerConfig c = compat_config("param_groups.yaml", 0);
  nn::Mlp model(c.model.mlp, c.seed);
  const std::vector<optim::ParamGroup> g = build_param_groups(c, model.named_parameters());
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].names, std::vector<std::string>{"layers.0.weight"});
  EXPECT_EQ(g[1].names, std::vector<std::string>{"layers.0.bias"});
  EXPECT_EQ(g[2].names, std::vector<std::string>{"layers.1.weight"});
  EXPECT_EQ(g[3].names, std::vector<std::string>{"layers.1.bias"});
  EXPECT_EQ(g[0].tags, std::vector<std::string>{"first"});
  EXPECT_EQ(g[1].tags, (std::vector<std::string>{"first", "no_decay"}));
  EXPECT_TRUE(g[2].tags.empty());
  // Learning rates: ScalePerParamLR(LinearLR 1 -> 0 over 10) times adjust_learning_rate 0.5
  // for the groups tagged first; ConstantLR 0.01 for the untagged one (tags [null]); the
  // optimizer's 1e-3 where no scheduler applies.
  near(g[0].learning_rate->value(4), 0.5 * 0.6);
  near(g[1].learning_rate->value(4), 0.5 * 0.6);
  near(g[2].learning_rate->value(4), 0.01);
  near(g[3].learning_rate->value(4), 1e-3);
  // Weight decay: ScalePerParamWD(CosineDecayWD 0.2 -> 0 over 10) times 0.5 for first; the
  // settings' own elsewhere (no_decay's entry sets 0; the optimizer's 0.1).
  near(g[0].weight_decay->value(5), 0.5 * 0.1);
  near(g[1].weight_decay->value(5), 0.5 * 0.1);
  EXPECT_FALSE(g[2].weight_decay);  // make_optimizer fills in the settings' constant
  const auto& s1 = std::get<optim::AdamW>(*g[1].settings);
  EXPECT_EQ(s1.weight_decay, 0.0);  // no_decay's entry
  EXPECT_EQ(s1.beta1, 0.8);         // first's entry
  EXPECT_EQ(s1.beta2, 0.9);
  EXPECT_EQ(std::get<optim::AdamW>(*g[3].settings).weight_decay, 0.0);
  EXPECT_EQ(std::get<optim::AdamW>(*g[3].settings).beta1, 0.9);
  EXPECT_FALSE(g[2].settings);  // the optimizer's own
  auto opt = optim::make_optimizer(c.optimizer.settings, g);
  EXPECT_EQ(opt->groups()[2].weight_decay->value(0), 0.1);
  EXPECT_EQ(opt->groups()[3].weight_decay->value(0), 0.0);
}

TEST(VendorSchedules, ParameterGroupMisusesAreRefusedByName) {
  const std::string at = "trainer.init.optimizer.AdamW.params";
  expect_error("param_groups.yaml", 0, {at + "[1].params=nothing.*"},
               "trainer.init.optimizer: params[1] (tag first): its globs match no parameter");
  expect_error("param_groups.yaml", 0, {at + "[1].weight_decay=0.5"},
               "the entries tagged no_decay and first both set weight_decay for layers.0.bias");
  expect_error("param_groups.yaml", 0,
               {"trainer.init.schedulers[1].ConstantLR.param_group_tags=nobody"},
               "trainer.init.schedulers[1] (ConstantLR): its param_group_tags match no parameter "
               "group");
  expect_error("param_groups.yaml", 0, {at + "[0].tag=''"}, "params[0].tag: an empty string");
  expect_error("param_groups.yaml", 0, {at + "[0].momentum=0.9"},
               "params[0].momentum: unknown key");
  // Two tagged schedulers of one key that meet in one group (layers.0.bias has both tags).
  expect_error("param_groups.yaml", 0,
               {"trainer.init.schedulers[2]={CosineDecayWD: {initial_val: 1, end_val: 0, "
                "total_iters: 5, param_group_tags: first}}",
                "trainer.init.schedulers[3]={ConstantWD: {val: 0.5, param_group_tags: no_decay}}"},
               "both drive weight_decay of the group tagged first, no_decay");
}

}  // namespace
}  // namespace mantissa::train
