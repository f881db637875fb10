// The GEMM routes through whole ops: a transformer block's forward and gradients on the
// bf16 routes (bf16, onednn_bf16) against mantissa's fp32 FMA GEMM (route fp32), under each
// half policy. Products of H values are exact on both routes (float16 / cbfloat16 through the
// hi/lo passes at POL 0, one dropped lo*lo term at POL 1), so the two differ only by the
// order of float32 sums and the H roundings that order can flip: within a few H epsilons of
// the largest value. Where this CPU has no bf16 units, the tests print a skip line.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "gradcheck.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::Format;
using precision::MatmulRoute;

struct BlockRun {
  std::vector<float> y;
  std::vector<std::vector<float>> grads;
};

// A GPT block's products: fused qkv projection, attention, output projection, MLP.
BlockRun block(const precision::Policy& p, const std::vector<Tensor>& params) {
  precision::Autocast cast(p);
  std::vector<Variable> v;
  for (const Tensor& t : params) v.emplace_back(t.clone(), true);
  const Variable qkv = ag::linear(v[0], v[1], v[2]);
  const Variable a = ag::linear(ag::causal_self_attention(qkv, 2), v[3], Variable());
  const Variable y = ag::linear(ag::gelu(ag::linear(a, v[4], Variable())), v[5], Variable());
  ag::backward(ag::sum(ag::mul(y, Variable(random_tensor(y.shape(), 40)))));
  BlockRun r{y.value().to_vector(), {}};
  for (const Variable& x : v) r.grads.push_back(x.grad().to_vector());
  return r;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::fabs(a[i] - b[i]), tol) << what << " element " << i;
  }
}

TEST(Routes, Bf16RoutesAgreeWithFp32FmaThroughATransformerBlock) {
  const std::int64_t b = 2, t = 24, c = 16;
  const std::vector<Tensor> params = {random_tensor({b, t, c}, 30),  random_tensor({3 * c, c}, 31),
                                      random_tensor({3 * c}, 32),    random_tensor({c, c}, 33),
                                      random_tensor({4 * c, c}, 34), random_tensor({c, 4 * c}, 35)};
  for (MatmulRoute route : {MatmulRoute::bf16, MatmulRoute::onednn_bf16}) {
    const std::string why = kernels::route_unavailable(route, Format::bfloat16);
    if (!why.empty()) {
      std::cout << "[  SKIP    ] route " << precision::route_name(route) << " not run: " << why
                << "\n";
      continue;
    }
    for (Format h : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
      for (int pol : {0, 1}) {
        const BlockRun fp32 = block({h, pol, MatmulRoute::fp32}, params);
        const BlockRun other = block({h, pol, route}, params);
        const double eps = numerics::traits(h).epsilon;
        const std::string label = std::string(precision::route_name(route)) + " " +
                                  std::string(numerics::name(h)) + " POL " + std::to_string(pol);
        expect_close(other.y, fp32.y, 8 * eps * max_abs(fp32.y), label + " forward");
        for (std::size_t g = 0; g < fp32.grads.size(); ++g) {
          expect_close(other.grads[g], fp32.grads[g], 16 * eps * max_abs(fp32.grads[g]),
                       label + " gradient " + std::to_string(g));
        }
      }
    }
  }
}

TEST(Routes, AskingForBf16UnitsWhereThereAreNoneIsAnError) {
  if (kernels::native_bf16().available && numerics::cpu_features().avx512_bf16) {
    GTEST_SKIP() << "skip: this CPU has both bf16 routes (" << kernels::native_bf16().isa
                 << ", AVX512-BF16), so asking for them is valid here";
  }
  const MatmulRoute missing =
      numerics::cpu_features().avx512_bf16 ? MatmulRoute::onednn_bf16 : MatmulRoute::bf16;
  precision::Autocast cast({Format::bfloat16, 1, missing});
  const Variable x(random_tensor({4, 8}, 41), true), w(random_tensor({8, 8}, 42), true);
  EXPECT_THROW(ag::linear(x, w, Variable()), Error);
}

}  // namespace
}  // namespace mantissa::testing
