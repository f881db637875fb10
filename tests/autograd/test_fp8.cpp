// linear in fp8 (precision/fp8.hpp, autograd/ops.hpp): forward and gradients against the same
// arithmetic in double on the fp8 values (cast by the numerics codec, independently of the op's
// cast kernel), the amaxes it records, and an MLP that learns in fp8.
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::Format;
using precision::Fp8Meta;
using precision::Fp8Slot;

// v * scale cast to `f` (nearest-even, saturating), decoded: the value a product reads.
double q(float v, float scale, Format f) {
  const numerics::Layout& l = numerics::layout(f);
  return numerics::decode(numerics::encode(v * scale, l, numerics::Rounding::nearest_even,
                                           numerics::Overflow::saturate),
                          l);
}

precision::Policy fp8_policy(precision::MatmulRoute route = precision::MatmulRoute::automatic) {
  precision::Fp8Settings s;
  s.enabled = true;
  s.history_length = 4;
  return {Format::bfloat16, 1, route, s};
}

void check_against_double(precision::MatmulRoute route);

// On each fp32 route: onednn_fp32 copies the fp8 operands to float32, and the backward
// decodes G's codes once for both products (linear_backward_operand); fp32 decodes them while
// packing.
TEST(LinearFp8, ForwardAndGradientsMatchDoubleArithmeticOnTheFp8Values) {
  for (const precision::MatmulRoute route :
       {precision::MatmulRoute::automatic, precision::MatmulRoute::onednn_fp32,
        precision::MatmulRoute::fp32}) {
    SCOPED_TRACE(std::string("route ") + std::string(precision::route_name(route)));
    check_against_double(route);
  }
}

// On the bf16 routes: onednn_bf16 copies fp8 operands to bfloat16, and the backward converts
// G's codes to bfloat16 once for both products (linear_backward_operand); bf16 decodes them
// while packing.
TEST(LinearFp8, ForwardAndGradientsMatchDoubleArithmeticOnTheBf16Routes) {
  std::vector<precision::MatmulRoute> routes;
  if (kernels::native_bf16().available) routes.push_back(precision::MatmulRoute::onednn_bf16);
  if (numerics::cpu_features().avx512_bf16) routes.push_back(precision::MatmulRoute::bf16);
  if (routes.empty()) GTEST_SKIP() << "skip: this CPU has no bf16 route (no AVX512-BF16, no AMX)";
  for (const precision::MatmulRoute route : routes) {
    SCOPED_TRACE(std::string("route ") + std::string(precision::route_name(route)));
    check_against_double(route);
  }
}

void check_against_double(precision::MatmulRoute route) {
  const std::int64_t rows = 6, in = 40, out = 5;
  const Tensor xt = random_tensor({rows, in}, 1, -3, 3),
               wt = random_tensor({out, in}, 2, -0.5, 0.5);
  const Tensor bt = random_tensor({out}, 3), rt = random_tensor({rows, out}, 4);
  auto meta = std::make_shared<Fp8Meta>(fp8_policy().fp8);
  // Scales other than 1: a first step records the amaxes, update() sets them.
  for (int step = 0; step < 2; ++step) {
    precision::Autocast cast(fp8_policy(route));
    const Variable x(xt, true), w(wt, true), b(bt, true);
    const Variable y = ag::linear(x, w, b, meta);
    ag::backward(ag::sum(ag::mul(y, Variable(rt))));
    if (step == 0) {
      meta->update();
      continue;
    }
    const float sx = meta->scale(Fp8Slot::input), sw = meta->scale(Fp8Slot::weight),
                sg = meta->scale(Fp8Slot::grad);
    float amax = 0;
    for (float v : xt.to_vector()) amax = std::max(amax, std::fabs(v));
    EXPECT_EQ(sx, 448.0f / amax);  // the first step's amax of x set this step's scale
    const auto xv = xt.to_vector(), wv = wt.to_vector(), bv = bt.to_vector();
    const auto yv = y.value().to_vector();
    EXPECT_EQ(y.value().format(), Format::bfloat16);
    // The incoming gradient is r rounded to bfloat16 (the H the op ran under).
    std::vector<float> g = rt.to_vector();
    numerics::round_to_format(g.data(), g.size(), Format::bfloat16);
    const double u = std::ldexp(1.0, -24);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t o = 0; o < out; ++o) {
        double acc = 0, mag = 0;
        for (std::int64_t k = 0; k < in; ++k) {
          const double p = q(xv[r * in + k], sx, Format::float8_e4m3) *
                           q(wv[o * in + k], sw, Format::float8_e4m3);
          acc += p;
          mag += std::fabs(p);
        }
        const double factor = (1.0 / sx) * (1.0 / sw);
        const double want = acc * factor + bv[o];
        const double bound = std::ldexp(1.0, -8) * std::fabs(want) +
                             (in + 4) * u * (mag * factor + std::fabs(bv[o]));
        ASSERT_NEAR(yv[r * out + o], want, bound) << r << "," << o;
      }
    }
    // dx = (gq . wq) / (sg sw), gq in e5m2 (the hybrid recipe).
    const auto dx = x.grad().to_vector(), dw = w.grad().to_vector(), db = b.grad().to_vector();
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < in; ++k) {
        double acc = 0, mag = 0;
        for (std::int64_t o = 0; o < out; ++o) {
          const double p = q(g[r * out + o], sg, Format::float8_e5m2) *
                           q(wv[o * in + k], sw, Format::float8_e4m3);
          acc += p;
          mag += std::fabs(p);
        }
        const double factor = (1.0 / sg) * (1.0 / sw);
        ASSERT_NEAR(dx[r * in + k], acc * factor, (out + 4) * u * mag * factor + 1e-30);
      }
    }
    for (std::int64_t o = 0; o < out; ++o) {
      double bias = 0;
      for (std::int64_t r = 0; r < rows; ++r) bias += g[r * out + o];
      ASSERT_NEAR(db[o], bias, 1e-5);  // the bias gradient comes from the bfloat16 gradient
      for (std::int64_t k = 0; k < in; ++k) {
        double acc = 0, mag = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          const double p = q(g[r * out + o], sg, Format::float8_e5m2) *
                           q(xv[r * in + k], sx, Format::float8_e4m3);
          acc += p;
          mag += std::fabs(p);
        }
        const double factor = (1.0 / sg) * (1.0 / sx);
        ASSERT_NEAR(dw[o * in + k], acc * factor, (rows + 4) * u * mag * factor + 1e-30);
      }
    }
  }
}

TEST(LinearFp8, RecordsAmaxesOnlyWhileTraining) {
  const Tensor xt = random_tensor({4, 8}, 5, -2, 2), wt = random_tensor({3, 8}, 6);
  auto meta = std::make_shared<Fp8Meta>(fp8_policy().fp8);
  precision::Autocast cast(fp8_policy());
  {
    ag::NoGradGuard no_grad;  // evaluation: scales used, nothing recorded
    ag::linear(Variable(xt), Variable(wt), Variable(), meta);
    meta->update();
    EXPECT_EQ(meta->scale(Fp8Slot::input), 1.0f);
  }
  ag::linear(Variable(xt, true), Variable(wt, true), Variable(), meta);
  meta->update();
  float amax = 0;
  for (float v : xt.to_vector()) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(meta->scale(Fp8Slot::input), 448.0f / amax);
}

TEST(LinearFp8, WithoutFp8InThePolicyItIsThePlainLinear) {
  const Tensor xt = random_tensor({4, 8}, 7), wt = random_tensor({3, 8}, 8);
  auto meta = std::make_shared<Fp8Meta>(fp8_policy().fp8);
  precision::Autocast cast({Format::bfloat16, 1});
  EXPECT_EQ(ag::linear(Variable(xt), Variable(wt), Variable(), meta).value().to_vector(),
            ag::linear(Variable(xt), Variable(wt), Variable()).value().to_vector());
}

}  // namespace
}  // namespace mantissa::testing
