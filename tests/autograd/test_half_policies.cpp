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
};

Result run(const OpFn& f, const std::vector<Tensor>& inputs, const precision::Policy& p) {
  precision::Autocast cast(p);
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  const Variable y = f(vars);
  const Tensor r = random_tensor(y.shape(), 77);
  ag::backward(ag::sum(ag::mul(y, Variable(r))));
  Result out{y.value().to_vector(), {}};
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

// `abs_bound`: the op on absolute inputs (matmul class) for the elementwise bound; else null.
// `forward_abs` > 0: an absolute forward bound of forward_abs * eps instead of eps/2 of the
// largest output.
void check_op(const char* label, const OpFn& f, const std::vector<Tensor>& inputs,
              bool matmul_class, double backward_k = 4.0, double forward_abs = 0.0) {
  const Result ref = run(f, inputs, {Format::float32, 1});
  std::vector<float> abs_y;
  double ratio = 1.0;
  if (matmul_class) {
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
    // The policy must have taken effect (cross_entropy alone stays float32 throughout).
    if (std::string(label) != "cross_entropy") {
      EXPECT_NE(got.y, ref.y) << label << " ignored the " << numerics::name(h) << " policy";
      // Results live in H between ops: every output is an H value (checked with the scalar
      // codec, independent of the bulk rounding the ops use).
      const numerics::Layout& l = numerics::layout(h);
      const numerics::Overflow o = numerics::traits(h).default_overflow;
      for (std::size_t i = 0; i < got.y.size(); ++i) {
        const float v = got.y[i];
        ASSERT_EQ(numerics::decode(numerics::encode(v, l, numerics::Rounding::nearest_even, o), l),
                  v)
            << label << " output " << i << " is not a " << numerics::name(h) << " value";
      }
    }
    for (std::size_t i = 0; i < ref.y.size(); ++i) {
      const double bound = matmul_class      ? eps * abs_y[i] + eps / 2 * std::fabs(ref.y[i]) + 1e-6
                           : forward_abs > 0 ? forward_abs * eps
                                             : eps / 2 * ymax * 1.01 + 1e-7;
      ASSERT_LE(std::fabs(got.y[i] - ref.y[i]), bound)
          << label << " forward under " << numerics::name(h) << " element " << i;
    }
    for (std::size_t g = 0; g < ref.grads.size(); ++g) {
      const double gmax = max_abs(ref.grads[g]);
      for (std::size_t i = 0; i < ref.grads[g].size(); ++i) {
        ASSERT_LE(std::fabs(got.grads[g][i] - ref.grads[g][i]),
                  backward_k * ratio * eps * gmax + 1e-6)
            << label << " gradient " << g << " under " << numerics::name(h) << " element " << i;
      }
    }
  }
}

TEST(HalfPolicies, ElementwiseAndPointwise) {
  const Tensor a = random_tensor({6, 8}, 1), b = random_tensor({8}, 2);
  check_op(
      "add", [](auto& v) { return ag::add(v[0], v[1]); }, {a, b}, false);
  check_op(
      "mul", [](auto& v) { return ag::mul(v[0], v[1]); }, {a, b}, false);
  check_op(
      "gelu", [](auto& v) { return ag::gelu(v[0]); }, {random_tensor({6, 8}, 3, -3, 3)}, false);
  check_op(
      "relu", [](auto& v) { return ag::relu(v[0]); }, {a}, false);
}

TEST(HalfPolicies, RowOps) {
  const Tensor x = random_tensor({5, 32}, 4, -2, 2);
  check_op(
      "layer_norm", [](auto& v) { return ag::layer_norm(v[0], v[1], v[2]); },
      {x, random_tensor({32}, 5), random_tensor({32}, 6)}, false);
  check_op(
      "softmax", [](auto& v) { return ag::softmax(v[0]); }, {x}, false);
  check_op(
      "log_softmax", [](auto& v) { return ag::log_softmax(v[0]); }, {x}, false);
  const std::vector<std::int32_t> t = {1, 0, 31, 7, -100};
  check_op(
      "cross_entropy", [&](auto& v) { return ag::cross_entropy(v[0], t); }, {x}, false);
}

TEST(HalfPolicies, MatmulClass) {
  check_op(
      "matmul", [](auto& v) { return ag::matmul(v[0], v[1]); },
      {random_tensor({2, 9, 64}, 7), random_tensor({64, 12}, 8)}, true);
  check_op(
      "linear", [](auto& v) { return ag::linear(v[0], v[1], v[2]); },
      {random_tensor({10, 48}, 9), random_tensor({16, 48}, 10), random_tensor({16}, 11)}, true);
  check_op(
      "conv2d", [](auto& v) { return ag::conv2d(v[0], v[1], v[2], 1, 1); },
      {random_tensor({2, 3, 8, 8}, 12), random_tensor({4, 3, 3, 3}, 13), random_tensor({4}, 14)},
      true);
}

TEST(HalfPolicies, CausalAttention) {
  const Shape s{2, 2, 40, 8};
  // Scores q.k/sqrt(8) with entries in [-1, 1] stay below 8 / sqrt(8) < 3 in magnitude.
  check_op(
      "causal_attention", [](auto& v) { return ag::causal_attention(v[0], v[1], v[2]); },
      {random_tensor(s, 15), random_tensor(s, 16), random_tensor(s, 17)}, false, 4.0 + 2 * 3.0,
      1.5 + 2 * 3.0);
}

TEST(HalfPolicies, CausalSelfAttentionFromFusedQkv) {
  // The same bounds as above: the fused form reads the same values through strides.
  check_op(
      "causal_self_attention", [](auto& v) { return ag::causal_self_attention(v[0], 2); },
      {random_tensor({2, 40, 48}, 18)}, false, 4.0 + 2 * 3.0, 1.5 + 2 * 3.0);
}

}  // namespace
}  // namespace mantissa::testing
