// Issue 27: an update whose result is not finite is never kept. Optimizer::step refuses it
// (weights, state and the step index as they were; the tensor named); a loaded state that no
// optimizer can reach (exp_avg_sq < 0, NaN) is refused naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "error_of.hpp"
#include "mantissa/error.hpp"
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

std::unique_ptr<Optimizer> adamw(std::vector<Variable> params, SchedulePtr lr, double eps) {
  ParamGroup g;
  g.params = std::move(params);
  g.names = {"a", "b"};
  g.learning_rate = std::move(lr);
  AdamW s;
  s.eps = eps;
  return make_optimizer(s, {g});
}

TEST(NonFiniteUpdates, AnUpdateThatOverflowsIsRefusedAndNothingChanges) {
  Variable a = with_grad({1.0f, 2.0f}, {0.5f, -0.5f}), b = with_grad({3.0f}, {1.0f});
  // Step 0 at lr 1e-3 is kept; step 1 at lr 1e39 would overflow float32 and is refused.
  auto opt = adamw({a, b}, piecewise_constant({1e-3, 1e39}, {1}), 1e-8);
  ASSERT_TRUE(opt->step());
  EXPECT_TRUE(opt->refused_tensor().empty());
  const std::vector<float> a1 = a.value().to_vector(), b1 = b.value().to_vector();
  std::map<std::string, std::vector<float>> state1;
  for (const auto& [name, t] : opt->state_tensors()) state1[name] = t.to_vector();
  EXPECT_FALSE(opt->step());
  EXPECT_EQ(opt->refused_tensor(), "a");
  EXPECT_EQ(opt->step_index(), 1);  // not advanced: the same step is tried again
  EXPECT_EQ(a.value().to_vector(), a1);
  EXPECT_EQ(b.value().to_vector(), b1);
  for (const auto& [name, t] : opt->state_tensors())
    EXPECT_EQ(t.to_vector(), state1.at(name)) << name;
}

TEST(NonFiniteUpdates, ANonFiniteStateIsRefusedOnTheFirstStepToo) {
  // eps 0 and a zero gradient: the update is 0 / 0 = NaN in 'a' (its state is removed again).
  Variable a = with_grad({1.0f, 2.0f}, {0.0f, 0.0f}), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3), 0.0);
  EXPECT_FALSE(opt->step());
  EXPECT_EQ(opt->refused_tensor(), "a");
  EXPECT_EQ(a.value().to_vector(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(b.value().to_vector(), (std::vector<float>{3.0f}));
  EXPECT_TRUE(opt->state_tensors().empty());
  EXPECT_EQ(opt->step_index(), 0);
}

TEST(NonFiniteUpdates, AFailureInALaterParameterPutsBackTheEarlierOnes) {
  // 'a' is updated (finite) before 'b', whose gradient squared overflows float32 (1e30^2):
  // exp_avg_sq of b is inf, so the step is refused and a's weights and state go back too.
  Variable a = with_grad({1.0f, 2.0f}, {0.5f, -0.5f}), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3), 1e-8);
  ASSERT_TRUE(opt->step());
  const std::vector<float> a1 = a.value().to_vector(), b1 = b.value().to_vector();
  std::map<std::string, std::vector<float>> state1;
  for (const auto& [name, t] : opt->state_tensors()) state1[name] = t.to_vector();
  b.mutable_grad() = Tensor::from_vector({1e30f}, Shape{1});
  EXPECT_FALSE(opt->step());
  EXPECT_EQ(opt->refused_tensor(), "b.exp_avg_sq");
  EXPECT_EQ(a.value().to_vector(), a1);
  EXPECT_EQ(b.value().to_vector(), b1);
  for (const auto& [name, t] : opt->state_tensors())
    EXPECT_EQ(t.to_vector(), state1.at(name)) << name;
  EXPECT_EQ(opt->step_index(), 1);
  // On a first step the later failure removes the earlier parameter's new state as well.
  Variable c = with_grad({1.0f}, {0.5f}), d = with_grad({3.0f}, {1e30f});
  auto first = adamw({c, d}, constant(1e-3), 1e-8);
  EXPECT_FALSE(first->step());
  EXPECT_EQ(first->refused_tensor(), "b.exp_avg_sq");
  EXPECT_EQ(c.value().to_vector(), (std::vector<float>{1.0f}));
  EXPECT_TRUE(first->state_tensors().empty());
}

// n values step * (i % period) + offset: many distinct values, none the same as its neighbour.
std::vector<float> sawtooth(std::size_t n, std::size_t period, float step, float offset) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(i % period) + offset;
  return v;
}

TEST(NonFiniteUpdates, AFailureInALaterRangeOfOneParameterPutsBackItsEarlierRanges) {
  // 100,003 elements: AdamW's guarded update runs in ranges of 32 Ki elements on both
  // threads. Only the last elements' gradient overflows when squared (exp_avg_sq = inf): every
  // range, the first ones already updated in place, goes back to its values bit for bit.
  const std::size_t n = 100003;
  const std::vector<float> value = sawtooth(n, 977, 0.001f, -0.4f);
  const std::vector<float> grad = sawtooth(n, 131, 0.01f, -0.6f);
  Variable a = with_grad(value, grad), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3), 1e-8);
  ASSERT_TRUE(opt->step());
  const std::vector<float> a1 = a.value().to_vector();
  EXPECT_NE(a1, value);  // the first step moved every weight
  std::map<std::string, std::vector<float>> state1;
  for (const auto& [name, t] : opt->state_tensors()) state1[name] = t.to_vector();
  std::vector<float> huge = grad;
  huge[n - 2] = 1e30f;
  a.mutable_grad() = Tensor::from_vector(huge, a.shape());
  EXPECT_FALSE(opt->step());
  EXPECT_EQ(opt->refused_tensor(), "a.exp_avg_sq");
  EXPECT_EQ(a.value().to_vector(), a1);
  for (const auto& [name, t] : opt->state_tensors())
    EXPECT_EQ(t.to_vector(), state1.at(name)) << name;
  // The same step with a finite gradient is taken.
  a.mutable_grad() = Tensor::from_vector(grad, a.shape());
  ASSERT_TRUE(opt->step());
  EXPECT_TRUE(opt->refused_tensor().empty());
}

TEST(NonFiniteUpdates, GuardedRangesGiveTheBitsOfTheWholeUpdate) {
  // The guarded step (ranges, copied and checked) and the unguarded one (one pass over the
  // whole parameter) compute each element alike: the same bits after three steps.
  const std::size_t n = 70001;
  const std::vector<float> value = sawtooth(n, 613, 0.002f, -0.5f);
  const std::vector<float> grad = sawtooth(n, 89, 0.03f, -1.2f);
  Variable a = with_grad(value, grad), b = with_grad({3.0f}, {1.0f});
  Variable c = with_grad(value, grad), d = with_grad({3.0f}, {1.0f});
  auto guarded = adamw({a, b}, constant(1e-2), 1e-8);
  auto whole = adamw({c, d}, constant(1e-2), 1e-8);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(guarded->step(NonFiniteUpdate::refuse));
    ASSERT_TRUE(whole->step(NonFiniteUpdate::apply));
  }
  EXPECT_EQ(a.value().to_vector(), c.value().to_vector());
  const auto sa = guarded->state_tensors(), sc = whole->state_tensors();
  for (const auto& [name, t] : sa) EXPECT_EQ(t.to_vector(), sc.at(name).to_vector()) << name;
}

TEST(NonFiniteUpdates, ApplyKeepsTheNonFiniteResultForExperiments) {
  Variable a = with_grad({1.0f, 2.0f}, {0.0f, 0.0f}), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3), 0.0);
  EXPECT_TRUE(opt->step(NonFiniteUpdate::apply));
  EXPECT_TRUE(std::isnan(a.value().to_vector()[0]));
  EXPECT_EQ(opt->step_index(), 1);
}

TEST(NonFiniteUpdates, ALoadedStateOutOfItsRangeIsRefusedNamingTheTensor) {
  Variable a = with_grad({1.0f, 2.0f}, {0.5f, -0.5f}), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3), 1e-8);
  ASSERT_TRUE(opt->step());
  std::map<std::string, Tensor> state = opt->state_tensors();
  state["a.exp_avg_sq"] = Tensor::from_vector({0.0f, -1.0f}, Shape{2});
  EXPECT_EQ(testing::error_of([&] { opt->load_state_tensors(state, 1); }),
            "optimizer adamw: state 'a.exp_avg_sq' holds -1 at index 1 (expected a finite "
            "number >= 0): the optimizer state is invalid");
  state["a.exp_avg_sq"] = Tensor::from_vector({0.0f, 0.0f}, Shape{2});
  state["b.exp_avg"] = Tensor::from_vector({std::numeric_limits<float>::infinity()}, Shape{1});
  EXPECT_EQ(testing::error_of([&] { opt->load_state_tensors(state, 1); }),
            "optimizer adamw: state 'b.exp_avg' holds inf at index 0 (expected a finite "
            "number): the optimizer state is invalid");
  state["b.exp_avg"] = Tensor::from_vector({-2.0f}, Shape{1});  // a first moment may be < 0
  EXPECT_EQ(testing::error_of([&] { opt->load_state_tensors(state, 1); }), "(no error)");
}

}  // namespace
}  // namespace mantissa::optim
