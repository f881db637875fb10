// A weight's H copy (Variable::value_rounded_to, what a bfloat16 run's linear layers read) is
// kept current by the optimizer's ranges: after a step it holds the new values rounded, in the
// same storage (no second conversion), and after a refused step the values put back rounded.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim {
namespace {

using numerics::Format;
using tensor::Shape;
using tensor::Tensor;

Variable with_grad(const std::vector<float>& value, const std::vector<float>& grad) {
  Variable v(Tensor::from_vector(value, Shape{static_cast<std::int64_t>(value.size())}), true);
  v.mutable_grad() = Tensor::from_vector(grad, v.shape());
  return v;
}

std::vector<float> sawtooth(std::size_t n, std::size_t period, float step, float offset) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(i % period) + offset;
  return v;
}

// The values of v rounded to f by the scalar codec, element by element.
std::vector<std::uint16_t> rounded(const Variable& v, Format f) {
  const std::vector<float> x = v.value().to_vector();
  std::vector<std::uint16_t> out(x.size());
  numerics::encode_array_ref(x.data(), x.size(), f, out.data());
  return out;
}

std::vector<std::uint16_t> bits(const Tensor& t) {
  const auto* p = static_cast<const std::uint16_t*>(t.raw_data());
  return {p, p + t.numel()};
}

std::unique_ptr<Optimizer> adamw(std::vector<Variable> params, SchedulePtr lr) {
  ParamGroup g;
  g.params = std::move(params);
  g.names = {"a", "b"};
  g.learning_rate = std::move(lr);
  return make_optimizer(AdamW{}, {g});
}

TEST(RoundedCopies, AStepKeepsTheCopyCurrentInItsStorage) {
  // 70,001 elements: three of the update's 32 Ki ranges, on both threads.
  const std::size_t n = 70001;
  for (const Format f : {Format::bfloat16, Format::float16}) {
    Variable a = with_grad(sawtooth(n, 613, 0.002f, -0.5f), sawtooth(n, 89, 0.03f, -1.2f));
    Variable b = with_grad({3.0f}, {1.0f});
    auto opt = adamw({a, b}, constant(1e-2));
    const void* storage = a.value_rounded_to(f).raw_data();
    for (int step = 0; step < 3; ++step) {
      for (const NonFiniteUpdate guard : {NonFiniteUpdate::refuse, NonFiniteUpdate::apply}) {
        ASSERT_TRUE(a.holds_current_copy());
        ASSERT_TRUE(opt->step(guard));
        ASSERT_TRUE(a.holds_current_copy()) << "the step left the copy stale";
        const Tensor& copy = a.value_rounded_to(f);
        EXPECT_EQ(copy.raw_data(), storage) << "the copy was made again";
        EXPECT_EQ(bits(copy), rounded(a, f)) << "step " << step;
      }
    }
    // b never had a copy: none is made by the step, one is made on request.
    EXPECT_FALSE(b.holds_current_copy());
    EXPECT_EQ(bits(b.value_rounded_to(f)), rounded(b, f));
  }
}

TEST(RoundedCopies, ARefusedStepLeavesACopyOfTheValuesPutBack) {
  const std::size_t n = 70001;
  const std::vector<float> grad = sawtooth(n, 131, 0.01f, -0.6f);
  Variable a = with_grad(sawtooth(n, 977, 0.001f, -0.4f), grad), b = with_grad({3.0f}, {1.0f});
  auto opt = adamw({a, b}, constant(1e-3));
  (void)a.value_rounded_to(Format::bfloat16);
  ASSERT_TRUE(opt->step());
  const std::vector<std::uint16_t> before = bits(a.value_rounded_to(Format::bfloat16));
  // The last range overflows (exp_avg_sq = inf): the earlier ranges, already updated and
  // rounded into the copy, go back, and so must the copy.
  std::vector<float> huge = grad;
  huge[n - 2] = 1e30f;
  a.mutable_grad() = Tensor::from_vector(huge, a.shape());
  ASSERT_FALSE(opt->step());
  EXPECT_EQ(bits(a.value_rounded_to(Format::bfloat16)), before);
  EXPECT_EQ(before, rounded(a, Format::bfloat16));
}

}  // namespace
}  // namespace mantissa::optim
