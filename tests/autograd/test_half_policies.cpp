// Under bfloat16, float16 and cbfloat16 policies each op's forward and backward match the
// float32 result within a tolerance derived from the format's epsilon (eps = 2^-m):
//  - the output is stored in H: relative error eps/2 of the largest output;
//  - matmul-class ops (matmul, linear, conv2d) also round their inputs to H: each product
//    a*b then carries relative error <= eps, so |dy| <= eps * (|a| @ |b|) + eps/2 |y|
//    elementwise, with |a| @ |b| computed by the same op on absolute values in float32;
//  - gradients: the incoming gradient is rounded to H (eps/2) and the op's saved inputs
//    carry the forward's rounding, so backward tolerances are 4 eps of the largest
//    gradient for elementwise and row ops, scaled by the same |a||b| / |y| ratio for the
//    matmul class; attention's softmax turns score errors of eps * |s| into relative
//    probability errors, so it gets (4 + 2 max|s|) eps; its forward also rounds q, k, v
//    and the probabilities, so |dy| <= (1.5 + 2 max|s|) eps max|v|.
// Every result is stored in H's own width (the tensor's format is H), except reductions to
// one value (sum, mean, cross_entropy: float32) and layout ops that only move elements
// (reshape, transpose, split: they keep their input's format and values exactly).
// All 25 ops of ops.hpp are covered.
#include <algorithm>
#include <cmath>
#include <string>

#include "gradcheck.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::Format;

struct Result {
  std::vector<float> y;
  std::vector<std::vector<float>> grads;
  Format format = Format::float32;  // the result's storage format
};

Result run(const OpFn& f, const std::vector<Tensor>& inputs, const precision::Policy& p) {
  precision::Autocast cast(p);
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  const Variable y = f(vars);
  const Tensor r = random_tensor(y.shape(), 77);
  ag::backward(ag::sum(ag::mul(y, Variable(r))));
  Result out{y.value().to_vector(), {}, y.value().format()};
  for (const Variable& v : vars) out.grads.push_back(v.grad().to_vector());
  return out;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

Tensor abs_of(const Tensor& t) {
  std::vector<float> v = t.to_vector();
  for (float& x : v) x = std::fabs(x);
  return Tensor::from_vector(v, t.shape());
}

// What an op's result is stored in under a half policy.
enum class Stored {
  half,     // H, rounded (the policy visibly changes the result)
  float32,  // a reduction to one value: float32
  input,    // a layout op on an H input: H, the values moved exactly
};

struct Check {
  bool matmul_class = false;  // |a| @ |b| sets the elementwise bound (see the header)
  double backward_k = 4.0;
  double forward_abs = 0.0;  // > 0: absolute forward bound forward_abs * eps
  Stored stored = Stored::half;
};

void check_op(const char* label, const OpFn& f, const std::vector<Tensor>& inputs,
              const Check& c = {}) {
  const Result ref = run(f, inputs, {Format::float32, 1});
  std::vector<float> abs_y;
  double ratio = 1.0;
  if (c.matmul_class) {
    std::vector<Tensor> abs_inputs;
    for (const Tensor& t : inputs) abs_inputs.push_back(abs_of(t));
    autograd::NoGradGuard no_grad;
    std::vector<Variable> v;
    for (const Tensor& t : abs_inputs) v.emplace_back(t);
    abs_y = f(v).value().to_vector();
    ratio = max_abs(abs_y) / max_abs(ref.y);
  }
  for (Format h : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
    const double eps = numerics::traits(h).epsilon;
    const Result got = run(f, inputs, {h, 1});
    const double ymax = max_abs(ref.y);
    switch (c.stored) {
      case Stored::half:
        EXPECT_EQ(got.format, h) << label << " did not store its result in " << numerics::name(h);
        EXPECT_NE(got.y, ref.y) << label << " ignored the " << numerics::name(h) << " policy";
        break;
      case Stored::float32:
        EXPECT_EQ(got.format, Format::float32) << label;
        break;
      case Stored::input:
        EXPECT_EQ(got.format, h) << label << " changed its input's format";
        break;
    }
    for (std::size_t i = 0; i < ref.y.size(); ++i) {
      const double bound = c.matmul_class ? eps * abs_y[i] + eps / 2 * std::fabs(ref.y[i]) + 1e-6
                           : c.forward_abs > 0 ? c.forward_abs * eps
                                               : eps / 2 * ymax * 1.01 + 1e-7;
      ASSERT_LE(std::fabs(got.y[i] - ref.y[i]), bound)
          << label << " forward under " << numerics::name(h) << " element " << i;
    }
    for (std::size_t g = 0; g < ref.grads.size(); ++g) {
      const double gmax = max_abs(ref.grads[g]);
      for (std::size_t i = 0; i < ref.grads[g].size(); ++i) {
        ASSERT_LE(std::fabs(got.grads[g][i] - ref.grads[g][i]),
                  c.backward_k * ratio * eps * gmax + 1e-6)
            << label << " gradient " << g << " under " << numerics::name(h) << " element " << i;
      }
    }
  }
}

TEST(HalfPolicies, ElementwiseAndPointwise) {
  const Tensor a = random_tensor({6, 8}, 1), b = random_tensor({8}, 2);
  check_op("add", [](auto& v) { return ag::add(v[0], v[1]); }, {a, b});
  check_op("mul", [](auto& v) { return ag::mul(v[0], v[1]); }, {a, b});
  check_op("gelu", [](auto& v) { return ag::gelu(v[0]); }, {random_tensor({6, 8}, 3, -3, 3)});
  check_op("relu", [](auto& v) { return ag::relu(v[0]); }, {a});
}

TEST(HalfPolicies, RowOps) {
  const Tensor x = random_tensor({5, 32}, 4, -2, 2);
  check_op("layer_norm", [](auto& v) { return ag::layer_norm(v[0], v[1], v[2]); },
           {x, random_tensor({32}, 5), random_tensor({32}, 6)});
  check_op("softmax", [](auto& v) { return ag::softmax(v[0]); }, {x});
  check_op("log_softmax", [](auto& v) { return ag::log_softmax(v[0]); }, {x});
  const std::vector<std::int32_t> t = {1, 0, 31, 7, -100};
  check_op("cross_entropy", [&](auto& v) { return ag::cross_entropy(v[0], t); }, {x},
           {.stored = Stored::float32});
}

TEST(HalfPolicies, MatmulClass) {
  check_op("matmul", [](auto& v) { return ag::matmul(v[0], v[1]); },
           {random_tensor({2, 9, 64}, 7), random_tensor({64, 12}, 8)}, {.matmul_class = true});
  check_op("linear", [](auto& v) { return ag::linear(v[0], v[1], v[2]); },
           {random_tensor({10, 48}, 9), random_tensor({16, 48}, 10), random_tensor({16}, 11)},
           {.matmul_class = true});
  check_op(
      "conv2d", [](auto& v) { return ag::conv2d(v[0], v[1], v[2], 1, 1); },
      {random_tensor({2, 3, 8, 8}, 12), random_tensor({4, 3, 3, 3}, 13), random_tensor({4}, 14)},
      {.matmul_class = true});
}

TEST(HalfPolicies, CausalAttention) {
  const Shape s{2, 2, 40, 8};
  // Scores q.k/sqrt(8) with entries in [-1, 1] stay below 8 / sqrt(8) < 3 in magnitude.
  check_op("causal_attention", [](auto& v) { return ag::causal_attention(v[0], v[1], v[2]); },
           {random_tensor(s, 15), random_tensor(s, 16), random_tensor(s, 17)},
           {.backward_k = 4.0 + 2 * 3.0, .forward_abs = 1.5 + 2 * 3.0});
}

TEST(HalfPolicies, CausalSelfAttentionFromFusedQkv) {
  // The same bounds as above: the fused form reads the same values through strides.
  check_op("causal_self_attention", [](auto& v) { return ag::causal_self_attention(v[0], 2); },
           {random_tensor({2, 40, 48}, 18)},
           {.backward_k = 4.0 + 2 * 3.0, .forward_abs = 1.5 + 2 * 3.0});
}

TEST(HalfPolicies, MoreElementwiseAndReductions) {
  const Tensor a = random_tensor({6, 8}, 19), b = random_tensor({6, 8}, 20);
  check_op("sub", [](auto& v) { return ag::sub(v[0], v[1]); }, {a, b});
  check_op("scale", [](auto& v) { return ag::scale(v[0], 0.7f); }, {a});
  // Reductions to one value: float32, from the inputs as given (the sum is exact in double).
  check_op("sum", [](auto& v) { return ag::sum(v[0]); }, {a}, {.stored = Stored::float32});
  check_op("mean", [](auto& v) { return ag::mean(v[0]); }, {a}, {.stored = Stored::float32});
  // Dropout draws the same mask in every run (the generator is seeded per call).
  check_op("dropout",
           [](auto& v) {
             tensor::Rng rng(21);
             return ag::dropout(v[0], 0.3f, true, rng);
           },
           {a});
  check_op("concat", [](auto& v) { return ag::concat({v[0], v[1]}, 1); }, {a, b});
  check_op("max_pool2d", [](auto& v) { return ag::max_pool2d(v[0], 2, 2); },
           {random_tensor({2, 3, 6, 6}, 22)});
  check_op("relu_max_pool2d", [](auto& v) { return ag::relu_max_pool2d(v[0], 2, 2); },
           {random_tensor({2, 3, 6, 6}, 24)});
  const std::vector<std::int32_t> ids = {3, 0, 7, 3, 5, 1};
  check_op("embedding",
           [&](auto& v) {
             return ag::embedding(v[0], ids, Shape{2, 3});
           },
           {random_tensor({8, 16}, 23)});
}

// Layout ops move elements in their stored format: from an H input (scale by 1 rounds to H),
// the result is in H with the same values, and so is the gradient they pass back.
TEST(HalfPolicies, LayoutOpsKeepTheirInputFormatExactly) {
  const auto layout = [](const char* label, const OpFn& op) {
    check_op(label,
             [op](auto& v) {
               const Variable h = ag::scale(v[0], 1.0f);
               return op({h});
             },
             {random_tensor({4, 6, 5}, 24)}, {.stored = Stored::input});
  };
  layout("reshape", [](auto& v) { return ag::reshape(v[0], Shape{24, 5}); });
  layout("transpose", [](auto& v) { return ag::transpose(v[0], 0, 2); });
  layout("split", [](auto& v) { return ag::split(v[0], {2, 4}, 1)[1]; });
}

}  // namespace
}  // namespace mantissa::testing
