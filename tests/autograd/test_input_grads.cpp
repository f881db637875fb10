// Only the gradients something receives are made (Node::needs_grad, PyTorch's
// needs_input_grad): linear and conv2d skip the input gradient of an input that needs none
// (the image batch entering the first layer) and still make it, with the right values, when it
// is needed. Values against hand-derived sums.
#include <gtest/gtest.h>

#include <vector>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/autograd/variable.hpp"

namespace mantissa::autograd {
namespace {

// x [1, 1, 2, 2], w [1, 1, 1, 1] = 3, stride 1, padding 0: y = 3 x; with dy = [1, 2, 3, 4]:
// dx = 3 dy, dw = sum x dy, db = sum dy.
struct ConvCase {
  Tensor x = Tensor::from_vector({1, -2, 0.5f, 4}, Shape{1, 1, 2, 2});
  Tensor w = Tensor::from_vector({3}, Shape{1, 1, 1, 1});
  Tensor b = Tensor::from_vector({0.25f}, Shape{1});
  Tensor dy = Tensor::from_vector({1, 2, 3, 4}, Shape{1, 1, 2, 2});
};

TEST(InputGrads, Conv2dMakesNoInputGradientNothingReceives) {
  ConvCase c;
  const Variable x(c.x, false), w(c.w, true), b(c.b, true);
  const Variable y = conv2d(x, w, b, 1, 0);
  EXPECT_EQ(y.value().to_vector(), (std::vector<float>{3.25f, -5.75f, 1.75f, 12.25f}));
  ASSERT_TRUE(y.grad_fn());
  const std::vector<Tensor> g = y.grad_fn()->apply(c.dy);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_FALSE(g[0].defined());
  ASSERT_TRUE(g[1].defined());
  EXPECT_EQ(g[1].to_vector(), (std::vector<float>{1 - 4 + 1.5f + 16}));
  ASSERT_TRUE(g[2].defined());
  EXPECT_EQ(g[2].to_vector(), (std::vector<float>{10}));
}

TEST(InputGrads, Conv2dMakesTheInputGradientWhenNeeded) {
  ConvCase c;
  const Variable x(c.x, true), w(c.w, false);
  const Variable y = conv2d(x, w, Variable(), 1, 0);
  const std::vector<Tensor> g = y.grad_fn()->apply(c.dy);
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].to_vector(), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_FALSE(g[1].defined());  // the weight needs none here
}

// x [2, 3], w [2, 3], bias: y = x w^T + b; dy [2, 2].
TEST(InputGrads, LinearMakesNoInputGradientNothingReceives) {
  const Tensor xt = Tensor::from_vector({1, 2, 3, -1, 0, 2}, Shape{2, 3});
  const Tensor wt = Tensor::from_vector({1, 0, -1, 2, 1, 0}, Shape{2, 3});
  const Tensor dy = Tensor::from_vector({1, -1, 2, 0.5f}, Shape{2, 2});
  for (bool x_grad : {false, true}) {
    const Variable x(xt, x_grad), w(wt, true), b(Tensor::from_vector({0, 0}, Shape{2}), true);
    const Variable y = linear(x, w, b);
    const std::vector<Tensor> g = y.grad_fn()->apply(dy);
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[0].defined(), x_grad);
    if (x_grad) {  // dx = dy w: rows [1 - 2, 0 - 1, -1 - 0], [2 + 1, 0.5, -2]
      EXPECT_EQ(g[0].to_vector(), (std::vector<float>{-1, -1, -1, 3, 0.5f, -2}));
    }
    // dW = dy^T x: [1 - 2, 2 + 0, 3 + 4], [-1 - 0.5, -2 + 0, -3 + 1]
    ASSERT_TRUE(g[1].defined());
    EXPECT_EQ(g[1].to_vector(), (std::vector<float>{-1, 2, 7, -1.5f, -2, -2}));
    ASSERT_TRUE(g[2].defined());
    EXPECT_EQ(g[2].to_vector(), (std::vector<float>{3, -0.5f}));
  }
}

}  // namespace
}  // namespace mantissa::autograd
