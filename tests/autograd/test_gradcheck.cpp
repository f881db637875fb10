// Every op's backward against central finite differences in double (float32 path).
#include "gradcheck.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;

// Values bounded away from zero (kinks of relu) by at least 0.1.
Tensor away_from_zero(const Shape& s, unsigned seed) {
  std::vector<float> v = random_tensor(s, seed).to_vector();
  for (float& x : v) x = x < 0 ? x - 0.1f : x + 0.1f;
  return Tensor::from_vector(v, s);
}

TEST(GradCheck, AddSubMulWithBroadcast) {
  for (const Shape& bs : {Shape{3, 4}, Shape{4}, Shape{1}}) {
    const Tensor a = random_tensor({3, 4}, 1), b = random_tensor(bs, 2);
    gradcheck("add", [](auto& v) { return ag::add(v[0], v[1]); }, {a, b});
    gradcheck("sub", [](auto& v) { return ag::sub(v[0], v[1]); }, {a, b});
    gradcheck("mul", [](auto& v) { return ag::mul(v[0], v[1]); }, {a, b});
  }
}

TEST(GradCheck, ScaleSumMean) {
  const Tensor a = random_tensor({2, 5}, 3);
  gradcheck("scale", [](auto& v) { return ag::scale(v[0], -1.7f); }, {a});
  gradcheck("sum", [](auto& v) { return ag::sum(v[0]); }, {a});
  gradcheck("mean", [](auto& v) { return ag::mean(v[0]); }, {a});
}

TEST(GradCheck, MatmulAndLinear) {
  gradcheck("matmul 2d", [](auto& v) { return ag::matmul(v[0], v[1]); },
            {random_tensor({3, 4}, 4), random_tensor({4, 5}, 5)});
  gradcheck("matmul shared b", [](auto& v) { return ag::matmul(v[0], v[1]); },
            {random_tensor({2, 3, 4}, 6), random_tensor({4, 2}, 7)});
  gradcheck("matmul batched", [](auto& v) { return ag::matmul(v[0], v[1]); },
            {random_tensor({2, 3, 4}, 8), random_tensor({2, 4, 2}, 9)});
  gradcheck("linear", [](auto& v) { return ag::linear(v[0], v[1], v[2]); },
            {random_tensor({2, 3, 4}, 10), random_tensor({5, 4}, 11), random_tensor({5}, 12)});
  gradcheck("linear no bias", [](auto& v) { return ag::linear(v[0], v[1], Variable()); },
            {random_tensor({3, 4}, 13), random_tensor({2, 4}, 14)});
}

TEST(GradCheck, Activations) {
  gradcheck("relu", [](auto& v) { return ag::relu(v[0]); }, {away_from_zero({3, 5}, 15)});
  gradcheck("gelu", [](auto& v) { return ag::gelu(v[0]); }, {random_tensor({3, 5}, 16, -3, 3)});
  gradcheck("dropout",
            [](auto& v) {
              tensor::Rng rng(5);  // the same mask on every evaluation
              return ag::dropout(v[0], 0.4f, true, rng);
            },
            {random_tensor({4, 6}, 17)});
}

TEST(GradCheck, LayerNormSoftmaxLogSoftmax) {
  gradcheck("layer_norm", [](auto& v) { return ag::layer_norm(v[0], v[1], v[2]); },
            {random_tensor({3, 6}, 18, -2, 2), random_tensor({6}, 19), random_tensor({6}, 20)});
  gradcheck("softmax", [](auto& v) { return ag::softmax(v[0]); },
            {random_tensor({3, 5}, 21, -2, 2)});
  gradcheck("log_softmax", [](auto& v) { return ag::log_softmax(v[0]); },
            {random_tensor({3, 5}, 22, -2, 2)});
}

TEST(GradCheck, CrossEntropyWithIgnoreIndex) {
  const std::vector<std::int32_t> targets = {2, -100, 0, 4};
  gradcheck("cross_entropy", [&](auto& v) { return ag::cross_entropy(v[0], targets); },
            {random_tensor({4, 5}, 23, -2, 2)});
}

TEST(GradCheck, EmbeddingReshapeTransposeConcatSplit) {
  const std::vector<std::int32_t> ids = {1, 3, 1, 0, 2, 3};
  gradcheck("embedding",
            [&](auto& v) {
              return ag::embedding(v[0], ids, Shape{2, 3});
            },
            {random_tensor({4, 5}, 24)});
  gradcheck("reshape",
            [](auto& v) {
              return ag::reshape(v[0], Shape{6, 2});
            },
            {random_tensor({3, 4}, 25)});
  gradcheck("transpose", [](auto& v) { return ag::transpose(v[0], 0, 2); },
            {random_tensor({2, 3, 4}, 26)});
  gradcheck("concat",
            [](auto& v) {
              return ag::concat({v[0], v[1]}, 1);
            },
            {random_tensor({2, 3, 2}, 27), random_tensor({2, 1, 2}, 28)});
  gradcheck("split",
            [](auto& v) {
              auto parts = ag::split(v[0], {1, 3}, -1);
              return ag::add(ag::scale(parts[0], 2.0f), ag::sum(parts[1]));
            },
            {random_tensor({3, 4}, 29)});
}

TEST(GradCheck, Conv2dAndMaxPool) {
  gradcheck(
      "conv2d", [](auto& v) { return ag::conv2d(v[0], v[1], v[2], 1, 1); },
      {random_tensor({2, 2, 5, 5}, 30), random_tensor({3, 2, 3, 3}, 31), random_tensor({3}, 32)});
  gradcheck("conv2d stride 2", [](auto& v) { return ag::conv2d(v[0], v[1], Variable(), 2, 0); },
            {random_tensor({1, 2, 6, 6}, 33), random_tensor({2, 2, 2, 2}, 34)});
  // Distinct values spaced by more than 2h, so no window's maximum changes under the probe.
  std::vector<float> vals(2 * 3 * 4 * 4);
  for (std::size_t i = 0; i < vals.size(); ++i)
    vals[i] = 0.05f * static_cast<float>((i * 37) % vals.size());
  gradcheck(
      "max_pool2d", [](auto& v) { return ag::max_pool2d(v[0], 2, 2); },
      {Tensor::from_vector(vals, Shape{2, 3, 4, 4})}, {}, 1e-3);
  // Values around zero: windows whose maximum is negative pass no gradient.
  std::vector<float> signed_vals = vals;
  for (float& v : signed_vals) v -= 0.9f;
  gradcheck(
      "relu_max_pool2d", [](auto& v) { return ag::relu_max_pool2d(v[0], 2, 2); },
      {Tensor::from_vector(signed_vals, Shape{2, 3, 4, 4})}, {}, 1e-3);
}

TEST(GradCheck, CausalAttention) {
  // t = 70 spans two 64-row blocks.
  const Shape s{1, 2, 70, 4};
  gradcheck("causal_attention", [](auto& v) { return ag::causal_attention(v[0], v[1], v[2]); },
            {random_tensor(s, 35), random_tensor(s, 36), random_tensor(s, 37)});
}

TEST(GradCheck, CausalSelfAttentionFromFusedQkv) {
  // [b, t, 3c] with c = 8 split into 2 heads of 4; t = 70 spans two 64-row blocks.
  gradcheck("causal_self_attention", [](auto& v) { return ag::causal_self_attention(v[0], 2); },
            {random_tensor(Shape{2, 70, 24}, 38)});
}

}  // namespace
}  // namespace mantissa::testing
