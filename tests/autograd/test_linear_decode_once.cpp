// linear's backward where the products' route copies G to float32 (oneDNN's fp32 matmul with G
// stored in H): G is decoded once, the bias gradient summed in the same pass
// (decode_with_column_sums), and both products read the float32 values. Checked against exact
// sums (small multiples of 1/16, whose products and sums float32 holds exactly), on that
// route and on mantissa's fp32 GEMM (which decodes G while packing), and the fused column sums
// bit for bit against bias_gradient's.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "gradcheck.hpp"
#include "linear_support.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::Format;
using precision::MatmulRoute;

// rows x cols values k / 16 with |k| <= 40, exact in bfloat16 and float16 (6 significant bits).
std::vector<float> sixteenths(std::int64_t n, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  unsigned s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int>((s >> 8) % 81) - 40) / 16.0f;
  }
  return v;
}

TEST(LinearDecodeOnce, GradientsAreTheExactSumsWithGDecodedOnceOrWhilePacking) {
  const std::int64_t rows = 37, in = 19, out = 23;
  const std::vector<float> xv = sixteenths(rows * in, 1), wv = sixteenths(out * in, 2),
                           bv = sixteenths(out, 3), gv = sixteenths(rows * out, 4);
  // Exact references in double: dx = G W, dW = G^T X, db = column sums of G. Every sum is a
  // multiple of 1/256 below 2^11: exact in float32 too.
  std::vector<double> dx(rows * in, 0.0), dw(out * in, 0.0), db(out, 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      const double g = gv[r * out + o];
      db[o] += g;
      for (std::int64_t i = 0; i < in; ++i) {
        dx[r * in + i] += g * wv[o * in + i];
        dw[o * in + i] += g * xv[r * in + i];
      }
    }
  }
  for (Format h : {Format::bfloat16, Format::float16}) {
    for (MatmulRoute route : {MatmulRoute::onednn_fp32, MatmulRoute::fp32}) {
      const precision::Policy p(h, 1, route);
      precision::Autocast cast(p);
      // The route named is known before any product: only onednn_fp32 copies G.
      const kernels::GemmPrecision gp = autograd::detail::gemm_precision(p);
      EXPECT_EQ(kernels::gemm_copies_to_float32(kernels::GemmShape::dense(rows, in, out), gp),
                route == MatmulRoute::onednn_fp32);
      {
        // ... and linear's backward takes G decoded once there, as stored elsewhere.
        const Tensor gh = Tensor::from_vector(gv, {rows, out}, h);
        const autograd::detail::BackwardOperand g =
            autograd::detail::linear_backward_operand(gh, {rows, in, out}, gp, true, true, nullptr);
        EXPECT_EQ(g.decoded, route == MatmulRoute::onednn_fp32);
        EXPECT_EQ(g.g.format, g.decoded ? Format::float32 : h);
      }
      const Variable x(Tensor::from_vector(xv, {rows, in}), true);
      const Variable w(Tensor::from_vector(wv, {out, in}), true);
      const Variable b(Tensor::from_vector(bv, {out}), true);
      const Variable y = ag::linear(x, w, b);
      ag::backward(ag::sum(ag::mul(y, Variable(Tensor::from_vector(gv, {rows, out})))));
      const std::string label =
          std::string(numerics::name(h)) + " route " + std::string(precision::route_name(route));
      const std::vector<float> gx = x.grad().to_vector(), gw = w.grad().to_vector(),
                               gb = b.grad().to_vector();
      // x is a leaf: its gradient is kept in float32 (not rounded to H).
      for (std::int64_t i = 0; i < rows * in; ++i) {
        ASSERT_EQ(gx[i], static_cast<float>(dx[i])) << label << " dx element " << i;
      }
      for (std::int64_t i = 0; i < out * in; ++i) {
        ASSERT_EQ(gw[i], static_cast<float>(dw[i])) << label << " dW element " << i;
      }
      for (std::int64_t o = 0; o < out; ++o) {
        ASSERT_EQ(gb[o], static_cast<float>(db[o])) << label << " db element " << o;
      }
    }
  }
}

// G stored as fp8 codes (a delayed-scaling backward's e5m2 cast): where oneDNN's bf16 matmul
// would copy the codes to bfloat16 for each product, they are converted once, and the
// bfloat16 values are the codes' values (the codec's decode, code by code); on the other
// routes, and when column sums are asked for, G as before.
TEST(LinearDecodeOnce, Fp8CodesTheBf16RouteWouldCopyAreConvertedToBfloat16Once) {
  if (!kernels::native_bf16().available) {
    GTEST_SKIP() << "skip: this CPU has no oneDNN bf16 matmul (no AVX512-BF16, no AMX)";
  }
  const std::int64_t rows = 37, in = 19, out = 23;
  const numerics::Layout& e5m2 = numerics::layout(Format::float8_e5m2);
  Tensor g = Tensor::empty({rows, out}, Format::float8_e5m2);
  auto* codes = static_cast<std::uint8_t*>(g.raw_data());
  std::uint32_t c = 0;
  for (std::int64_t i = 0; i < rows * out; ++i, ++c) {
    while (!std::isfinite(numerics::decode(c % 256, e5m2))) ++c;  // every finite code in turn
    codes[i] = static_cast<std::uint8_t>(c % 256);
  }
  for (MatmulRoute route :
       {MatmulRoute::onednn_bf16, MatmulRoute::onednn_fp32, MatmulRoute::fp32}) {
    const kernels::GemmPrecision gp{Format::float8_e4m3, 1, kernels::GemmAlgorithm::automatic,
                                    route};
    const std::string label(precision::route_name(route));
    EXPECT_EQ(kernels::gemm_copies_to_bf16(kernels::GemmShape::dense(rows, in, out), gp),
              route == MatmulRoute::onednn_bf16)
        << label;
    const autograd::detail::BackwardOperand once =
        autograd::detail::linear_backward_operand(g, {rows, in, out}, gp, true, true, nullptr);
    EXPECT_EQ(once.decoded, route != MatmulRoute::fp32) << label;
    const Format want = route == MatmulRoute::onednn_bf16   ? Format::bfloat16
                        : route == MatmulRoute::onednn_fp32 ? Format::float32
                                                            : Format::float8_e5m2;
    EXPECT_EQ(once.g.format, want) << label;
    if (route == MatmulRoute::onednn_bf16) {
      const auto* bits = static_cast<const std::uint16_t*>(once.g.data);
      for (std::int64_t i = 0; i < rows * out; ++i) {
        const float v = numerics::decode(codes[i], e5m2);
        ASSERT_EQ(bits[i], std::bit_cast<std::uint32_t>(v) >> 16) << "code " << int{codes[i]};
      }
      // With column sums asked for (the plain linear's bias gradient), G as stored.
      std::vector<float> sums(static_cast<std::size_t>(out), 0.0f);
      const autograd::detail::BackwardOperand with_sums = autograd::detail::linear_backward_operand(
          g, {rows, in, out}, gp, true, true, sums.data());
      EXPECT_FALSE(with_sums.decoded);
      EXPECT_EQ(with_sums.g.format, Format::float8_e5m2);
    }
  }
}

TEST(LinearDecodeOnce, FusedColumnSumsAreBiasGradientsBitForBit) {
  for (Format h : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
    for (const auto& [rows, out] :
         {std::pair<std::int64_t, std::int64_t>{300, 50}, {1, 7}, {2048, 96}, {5, 1}}) {
      const Tensor g = random_tensor({rows, out}, 11, -3.0f, 3.0f);
      const Tensor gh = Tensor::from_vector(g.to_vector(), {rows, out}, h);
      const std::vector<float> want = autograd::detail::bias_gradient(gh, rows, out).to_vector();
      std::vector<float> values(static_cast<std::size_t>(rows * out), -1.0f);
      std::vector<float> sums(static_cast<std::size_t>(out), 0.0f);
      autograd::detail::decode_with_column_sums(gh, rows, out, values.data(), sums.data());
      EXPECT_EQ(sums, want) << numerics::name(h) << " " << rows << "x" << out;
      // The values are G's, decoded (an independent decode: the tensor's own).
      EXPECT_EQ(values, gh.to_vector()) << numerics::name(h) << " " << rows << "x" << out;
      // Without sums: the values alone.
      std::vector<float> alone(values.size(), -1.0f);
      autograd::detail::decode_with_column_sums(gh, rows, out, alone.data(), nullptr);
      EXPECT_EQ(alone, values);
    }
  }
}

}  // namespace
}  // namespace mantissa::testing
