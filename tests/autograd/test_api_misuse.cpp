// The autograd API under mistaken use (the library audit of 2026-11-28, docs/reliability.md):
// an undefined Variable (one made by Variable()) throws mantissa::Error from every accessor
// and op that reads it (once a null dereference), and attention heads of width 0 run on the
// route that once refused an empty sum inside a parallel region (std::terminate).
#include <gtest/gtest.h>

#include "error_of.hpp"
#include "gradcheck.hpp"
#include "mantissa/error.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;

TEST(AutogradMisuse, AnUndefinedVariableThrowsFromEveryAccessorAndOp) {
  Variable v;
  EXPECT_FALSE(v.defined());
  EXPECT_FALSE(v.requires_grad());
  const std::vector<std::function<void()>> uses = {
      [&] { (void)v.shape(); },
      [&] { (void)v.value(); },
      [&] { (void)v.grad(); },
      [&] { v.zero_grad(); },
      [&] { (void)v.is_leaf(); },
      [&] { (void)v.format(); },
      [&] { v.bump_version(); },
      [&] { (void)ag::relu(v); },
      [&] { (void)ag::add(Variable(random_tensor({2}, 1)), v); },
      [&] {
        (void)ag::linear(Variable(random_tensor({2, 3}, 2)), v, Variable());
      },
  };
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const std::string e = error_of(uses[i]);
    EXPECT_NE(e.find("the variable is undefined"), std::string::npos) << "use " << i << ": " << e;
  }
}

TEST(AutogradMisuse, ASplitSizeOutsideTheDimensionIsNamed) {
  const Variable x(random_tensor({2, 6}, 3));
  // -1 and 7 once summed to the 6 and sliced out of range.
  EXPECT_EQ(error_of([&] {
              (void)ag::split(x, {-1, 7}, 1);
            }),
            "split: size -1 at index 0 (expected 0..6, the length of dimension 1)");
  EXPECT_EQ(error_of([&] {
              (void)ag::split(x, {2, 3}, 1);
            }),
            "split: sizes add up to 5, not the 6 of dimension 1");
  EXPECT_EQ(error_of([&] {
              (void)ag::split(x, {6, 6}, 1);
            }),
            "split: sizes add up to more than the 6 of dimension 1");
  EXPECT_EQ(ag::split(x, {0, 6}, 1).size(), 2u);  // an empty part is allowed
}

TEST(AutogradMisuse, AttentionHeadsOfWidthZeroRunOnEveryFp32Route) {
  for (precision::MatmulRoute route :
       {precision::MatmulRoute::fp32, precision::MatmulRoute::onednn_fp32}) {
    precision::Autocast cast(precision::Policy(numerics::Format::bfloat16, 1, route));
    const Variable q(random_tensor({1, 2, 4, 0}, 3), true);
    const Variable y = ag::causal_attention(q, q, q);
    EXPECT_EQ(y.shape(), (Shape{1, 2, 4, 0})) << precision::route_name(route);
    ag::backward(ag::sum(y));
    EXPECT_EQ(q.grad().shape(), (Shape{1, 2, 4, 0}));
  }
}

TEST(AutogradMisuse, ConvolutionPoolingAndLayerNormNameTheArgumentThatIsWrong) {
  const Variable x(random_tensor({1, 1, 4, 4}, 4), true);
  std::string e = error_of([&] {
    (void)ag::conv2d(Variable(random_tensor({0, 1, 4, 4}, 5)),
                     Variable(random_tensor({2, 1, 3, 3}, 6)), Variable(), 1, 0);
  });
  EXPECT_NE(e.find("conv2d: input [0, 1, 4, 4]"), std::string::npos) << e;
  EXPECT_NE(e.find("every size >= 1"), std::string::npos) << e;
  e = error_of([&] { (void)ag::max_pool2d(x, 2, 0); });
  EXPECT_NE(e.find("stride 0"), std::string::npos) << e;
  const Variable g(random_tensor({4}, 7)), b(random_tensor({4}, 8));
  e = error_of([&] { (void)ag::layer_norm(x, g, b, -1.0f); });
  EXPECT_NE(e.find("eps -1"), std::string::npos) << e;
  const Variable scalar(random_tensor({}, 9));
  e = error_of([&] { (void)ag::layer_norm(scalar, scalar, scalar, 1e-5f); });
  EXPECT_NE(e.find("the input is a scalar"), std::string::npos) << e;
}

}  // namespace
}  // namespace mantissa::testing
