// The fast kernels against their naive twins (double precision), on random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fpu_flags.hpp"
#include "mantissa/kernels/attention.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/kernels/optimizer_updates.hpp"
#include "mantissa/kernels/pointwise.hpp"
#include "mantissa/kernels/rows.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "simd_paths.hpp"

namespace mantissa::kernels {
namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double atol,
                  double rtol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], atol + rtol * std::fabs(b[i])) << what << " element " << i;
  }
}

TEST(KernelTwins, Gelu) {
  // 10,003 values (a tail past every vector width), and the far ends: exp(-2u) reaching 0 and
  // inf, where GELU is x and -0.
  auto x = random_values(10'003, 1, 3.0f);
  for (const float far : {-1e30f, -200.0f, -12.0f, 12.0f, 200.0f, 1e30f}) x.push_back(far);
  std::vector<float> y(x.size()), yr(x.size()), dy = random_values(x.size(), 2), dx(x.size()),
                                                dxr(x.size());
  const auto n = static_cast<std::int64_t>(x.size());
  gelu_forward_ref(x.data(), yr.data(), n);
  gelu_backward_ref(x.data(), dy.data(), dxr.data(), n);
  testing::on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                             [&](const std::string& path) {
                               SCOPED_TRACE(path);
                               gelu_forward(x.data(), y.data(), n);
                               expect_close(y, yr, 1e-6, 1e-5, "gelu forward");
                               gelu_backward(x.data(), dy.data(), dx.data(), n);
                               expect_close(dx, dxr, 1e-6, 1e-5, "gelu backward");
                             });
}

TEST(KernelTwins, LayerNormParameterGradientsReadCbfloat16SubnormalsWhateverTheFlushFlags) {
  // x of cbfloat16 subnormals (j x 2^-39, 0 < j < 512) and zeros, dy of small integers, mean 0
  // and rstd 1: dgamma = sum dy x and dbeta = sum dy are exact in float32 in any order. With
  // flush-to-zero and denormals-are-zero set, the rows' decode must still read x.
  const std::int64_t rows = 29, cols = 45;
  std::mt19937 rng(8);
  std::vector<float> x(rows * cols), dy(rows * cols);
  for (float& v : x)
    v = rng() % 7 == 0
            ? 0.0f
            : std::ldexp(static_cast<float>(1 + rng() % 511), -39) * (rng() % 2 ? 1.0f : -1.0f);
  for (float& v : dy) v = static_cast<float>(static_cast<int>(rng() % 9) - 4);
  std::vector<std::uint16_t> xb(x.size()), gb(dy.size());
  numerics::encode_array(x.data(), x.size(), numerics::Format::cbfloat16, xb.data());
  numerics::encode_array(dy.data(), dy.size(), numerics::Format::cbfloat16, gb.data());
  std::vector<float> dg(cols, 0.0f), db(cols, 0.0f);
  {
    const testing::FlushSubnormals flags;
    for (std::int64_t r = 0; r < rows; ++r) {
      layer_norm_param_gradients_16(xb.data() + r * cols, gb.data() + r * cols,
                                    numerics::Format::cbfloat16, 0.0f, 1.0f, dg.data(), db.data(),
                                    cols);
    }
  }
  for (std::int64_t c = 0; c < cols; ++c) {
    double sg = 0, sb = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      sg += static_cast<double>(dy[r * cols + c]) * x[r * cols + c];
      sb += dy[r * cols + c];
    }
    ASSERT_EQ(static_cast<double>(dg[c]), sg) << "dgamma column " << c;
    ASSERT_EQ(static_cast<double>(db[c]), sb) << "dbeta column " << c;
  }
}

TEST(KernelTwins, LayerNormParameterGradientsFrom16BitRowsAreTheDecodedRowsSums) {
  // bfloat16, float16 and cbfloat16 rows read as stored: the same floats as the float32 form
  // on the rows decoded by the numerics codec (values with an infinity, a NaN and subnormals
  // among them).
  const std::int64_t rows = 37, cols = 70;
  auto x = random_values(rows * cols, 31, 3.0f), dy = random_values(rows * cols, 32);
  x[5] = 1e-39f;  // a subnormal, kept by bfloat16
  x[6] = 3e-11f;  // a cbfloat16 subnormal (below 2^-30)
  x[7] = -2e-5f;  // a float16 subnormal
  dy[9] = std::numeric_limits<float>::infinity();
  dy[12] = -std::numeric_limits<float>::quiet_NaN();
  for (const numerics::Format f :
       {numerics::Format::bfloat16, numerics::Format::float16, numerics::Format::cbfloat16}) {
    SCOPED_TRACE(numerics::name(f));
    std::vector<std::uint16_t> xb(x.size()), gb(dy.size());
    numerics::encode_array(x.data(), x.size(), f, xb.data());
    numerics::encode_array(dy.data(), dy.size(), f, gb.data());
    // A NaN whose quiet bit is clear (payload 1): decoded quiet, its payload kept.
    const numerics::Layout& l = numerics::layout(f);
    gb[15] = static_cast<std::uint16_t>((l.exponent_mask() << l.mantissa_bits) | 1u);
    std::vector<float> xf(x.size()), gf(dy.size());
    numerics::decode_array(xb.data(), xb.size(), f, xf.data());
    numerics::decode_array(gb.data(), gb.size(), f, gf.data());
    if (f == numerics::Format::cbfloat16) {
      EXPECT_NE(xf[6], 0.0f);  // kept as a subnormal
    }
    std::vector<float> dg(cols, 0.0f), db(cols, 0.0f), dg_16(cols, 0.0f), db_16(cols, 0.0f);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float mean = 0.0625f * static_cast<float>(r % 5), rstd = 1.5f;
      layer_norm_param_gradients(xf.data() + r * cols, gf.data() + r * cols, mean, rstd, dg.data(),
                                 db.data(), cols);
      layer_norm_param_gradients_16(xb.data() + r * cols, gb.data() + r * cols, f, mean, rstd,
                                    dg_16.data(), db_16.data(), cols);
    }
    EXPECT_EQ(std::memcmp(dg.data(), dg_16.data(), cols * 4), 0);
    EXPECT_EQ(std::memcmp(db.data(), db_16.data(), cols * 4), 0);
    EXPECT_TRUE(std::isinf(db_16[9]));                            // the inf went in
    EXPECT_TRUE(std::isnan(db_16[12]) && std::isnan(db_16[15]));  // and the NaNs
    // And against the sums in double of the stored values themselves.
    for (std::int64_t c = 0; c < cols; ++c) {
      if (c == 9 || c == 12 || c == 15) continue;
      double sg = 0, sb = 0, size = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const double mean = 0.0625 * static_cast<double>(r % 5);
        const double xhat = (static_cast<double>(xf[r * cols + c]) - mean) * 1.5;
        sg += gf[r * cols + c] * xhat;
        sb += gf[r * cols + c];
        size += std::fabs(gf[r * cols + c] * xhat) + std::fabs(gf[r * cols + c]);
      }
      // rows float additions and products, each off by at most 2^-24 of the running size.
      const double bound = 4 * static_cast<double>(rows) * std::ldexp(1.0, -24) * (size + 1);
      EXPECT_NEAR(dg_16[c], sg, bound) << c;
      EXPECT_NEAR(db_16[c], sb, bound) << c;
    }
  }
  EXPECT_THROW(layer_norm_param_gradients_16(nullptr, nullptr, numerics::Format::float8_e4m3, 0, 1,
                                             nullptr, nullptr, 0),
               Error);
}

TEST(KernelTwins, LayerNormParameterGradientsAnyColumnSplit) {
  // dgamma = sum_r dy * xhat, dbeta = sum_r dy, in double as the twin; made row by row over
  // all columns, and over two column segments (as two threads make them): the same bits.
  const std::int64_t rows = 53, cols = 96;
  const auto x = random_values(rows * cols, 21, 2.0f), dy = random_values(rows * cols, 22);
  const auto gamma = random_values(cols, 23), beta = random_values(cols, 24);
  std::vector<float> y(x.size()), mean(rows), rstd(rows);
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows,
                     cols, 1e-5f);
  std::vector<float> dg(cols, 0.0f), db(cols, 0.0f), dg2(cols, 0.0f), db2(cols, 0.0f);
  const std::int64_t split = 40;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * cols;
    const float* gr = dy.data() + r * cols;
    layer_norm_param_gradients(xr, gr, mean[r], rstd[r], dg.data(), db.data(), cols);
    layer_norm_param_gradients(xr, gr, mean[r], rstd[r], dg2.data(), db2.data(), split);
    layer_norm_param_gradients(xr + split, gr + split, mean[r], rstd[r], dg2.data() + split,
                               db2.data() + split, cols - split);
  }
  EXPECT_EQ(dg, dg2);
  EXPECT_EQ(db, db2);
  std::vector<float> dgr(cols), dbr(cols);
  for (std::int64_t c = 0; c < cols; ++c) {
    double sg = 0, sb = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double xhat = (static_cast<double>(x[r * cols + c]) - mean[r]) * rstd[r];
      sg += dy[r * cols + c] * xhat;
      sb += dy[r * cols + c];
    }
    dgr[c] = static_cast<float>(sg);
    dbr[c] = static_cast<float>(sb);
  }
  // fp32 sums of `rows` terms of size ~1-3: absolute error about rows * 3 * 2^-24 each.
  expect_close(dg, dgr, rows * 8 * std::ldexp(1.0, -24), 0, "layer_norm dgamma");
  expect_close(db, dbr, rows * 4 * std::ldexp(1.0, -24), 0, "layer_norm dbeta");
}

TEST(KernelTwins, LayerNormAndSoftmax) {
  const std::int64_t rows = 37, cols = 384;
  const auto x = random_values(rows * cols, 3, 2.0f);
  const auto gamma = random_values(cols, 4), beta = random_values(cols, 5);
  std::vector<float> y(x.size()), yr(x.size()), mean(rows), rstd(rows);
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows,
                     cols, 1e-5f);
  layer_norm_forward_ref(x.data(), gamma.data(), beta.data(), yr.data(), rows, cols, 1e-5f);
  // fp32 sums over `cols` values: relative error about cols * 2^-24.
  expect_close(y, yr, 1e-5, cols * std::ldexp(1.0, -24) * 4, "layer_norm");
  softmax_forward(x.data(), y.data(), rows, cols);
  softmax_forward_ref(x.data(), yr.data(), rows, cols);
  expect_close(y, yr, 1e-8, cols * std::ldexp(1.0, -24) * 4, "softmax");
  log_softmax_forward(x.data(), y.data(), rows, cols);
  log_softmax_forward_ref(x.data(), yr.data(), rows, cols);
  expect_close(y, yr, 1e-5, 1e-6, "log_softmax");
  // cross-entropy per row = -log_softmax at the target, from the same reference.
  std::vector<std::int32_t> targets(rows);
  for (std::int64_t r = 0; r < rows; ++r) targets[r] = static_cast<std::int32_t>((r * 7) % cols);
  targets[3] = -100;
  std::vector<float> loss(rows), lse(rows);
  const std::int64_t counted =
      cross_entropy_forward(x.data(), targets.data(), rows, cols, -100, loss.data(), lse.data());
  EXPECT_EQ(counted, rows - 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double want = targets[r] == -100 ? 0.0 : -yr[r * cols + targets[r]];
    EXPECT_NEAR(loss[r], want, 1e-5) << "row " << r;
  }
}

TEST(KernelTwins, BlockwiseAttentionMatchesFullScores) {
  for (std::int64_t t : {1, 63, 64, 65, 200}) {
    const std::int64_t bh = 3, d = 16;
    const auto q = random_values(bh * t * d, 6), k = random_values(bh * t * d, 7),
               v = random_values(bh * t * d, 8);
    std::vector<float> o(q.size()), r(q.size()), lse(bh * t);
    const float scale = 0.25f;
    attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), bh, t, d, scale);
    attention_forward_ref(q.data(), k.data(), v.data(), r.data(), bh, t, d, scale);
    // Each output is a convex combination of t values of v: error ~ (t + d) * 2^-24 * max|v|.
    expect_close(o, r, (t + d) * std::ldexp(1.0, -24) * 8, 0, "attention");
  }
}

TEST(KernelTwins, InterleavedHeadsMatchDenseHeads) {
  // q, k, v as column thirds of [b, t, 3c] rows, output as [b, t, c] rows: each head must
  // give what the reference gives for that head gathered into dense [t, d].
  const std::int64_t b = 2, heads = 3, t = 70, d = 8, c = heads * d;
  const auto qkv = random_values(b * t * 3 * c, 11);
  const AttentionShape s{b, heads, t, d};
  std::vector<float> o(b * t * c), lse(b * heads * t);
  const float scale = 0.35f;
  attention_forward(s, HeadLayout::interleaved(s, 3 * c), qkv.data(), qkv.data() + c,
                    qkv.data() + 2 * c, HeadLayout::interleaved(s, c), {o.data(), Format::float32},
                    lse.data(), scale);
  for (std::int64_t bb = 0; bb < b; ++bb) {
    for (std::int64_t h = 0; h < heads; ++h) {
      std::vector<float> q(t * d), k(t * d), v(t * d), r(t * d), got(t * d);
      for (std::int64_t i = 0; i < t; ++i) {
        for (std::int64_t j = 0; j < d; ++j) {
          const std::int64_t row = (bb * t + i) * 3 * c + h * d + j;
          q[i * d + j] = qkv[row];
          k[i * d + j] = qkv[row + c];
          v[i * d + j] = qkv[row + 2 * c];
          got[i * d + j] = o[(bb * t + i) * c + h * d + j];
        }
      }
      attention_forward_ref(q.data(), k.data(), v.data(), r.data(), 1, t, d, scale);
      expect_close(got, r, (t + d) * std::ldexp(1.0, -24) * 8, 0, "interleaved attention");
    }
  }
}

TEST(KernelTwins, ExpMatchesDoubleToTwoUlp) {
  // A sweep over the normal range plus the edges; lengths not a multiple of 8 put values in
  // the scalar tail too, which must agree with the vector lanes bit for bit.
  std::vector<float> x;
  for (float v = -86.9f; v < 88.3f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f}) x.push_back(v);
  std::vector<float> y(x.size()), r(x.size());
  exp_forward(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  exp_forward_ref(x.data(), r.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(y[i], r[i], 2.0 * std::ldexp(1.0, -23) * std::fabs(r[i])) << "exp(" << x[i] << ")";
  }
  for (std::size_t off = 0; off < 8; ++off) {
    std::vector<float> tail(x.begin() + static_cast<std::ptrdiff_t>(off),
                            x.begin() + 13 + static_cast<std::ptrdiff_t>(off));
    std::vector<float> ty(tail.size());
    exp_forward(tail.data(), ty.data(), static_cast<std::int64_t>(tail.size()));
    for (std::size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(ty[i], y[i + off]) << "offset " << off;
  }
  // Outside the normal range: 0 below, inf above, NaN stays NaN (in vector lanes and tail).
  const float special[4] = {-1000.0f, 1000.0f, -INFINITY, NAN};
  float in[20], out[20];
  for (int i = 0; i < 20; ++i) in[i] = special[i % 4];
  exp_forward(in, out, 20);
  for (int i = 0; i < 20; i += 4) {
    EXPECT_EQ(out[i], 0.0f);
    EXPECT_EQ(out[i + 1], INFINITY);
    EXPECT_EQ(out[i + 2], 0.0f);
    EXPECT_TRUE(std::isnan(out[i + 3]));
  }
}

TEST(KernelTwins, GradientScaleAndSumOfSquares) {
  for (std::int64_t n : {0, 7, 1000, (1 << 14) + 3, 200000}) {
    auto a = random_values(static_cast<std::size_t>(n), 21, 3.0f);
    auto b = a;
    const double fast = scale_and_sum_squares(a.data(), n, 0.125f);
    const double ref = scale_and_sum_squares_ref(b.data(), n, 0.125f);
    EXPECT_EQ(a, b) << "scaling is one multiply per element";  // powers of two: exact
    // Both sums accumulate in double: they differ only by reassociation, ~n * 2^-53.
    EXPECT_NEAR(fast, ref, 1e-13 * static_cast<double>(n + 1) * ref) << n;
    EXPECT_NEAR(sum_squares(a.data(), n), ref, 1e-13 * static_cast<double>(n + 1) * ref);
  }
  // Hand-derived: 3^2 + 4^2 = 25; a non-finite value makes the sum non-finite.
  std::vector<float> v = {3.0f, 4.0f};
  EXPECT_EQ(sum_squares(v.data(), 2), 25.0);
  v.resize(100000, 0.0f);
  v[77777] = INFINITY;
  EXPECT_FALSE(std::isfinite(sum_squares(v.data(), 100000)));
  v[77777] = NAN;
  EXPECT_FALSE(std::isfinite(scale_and_sum_squares(v.data(), 100000, 0.5f)));
}

TEST(KernelTwins, Im2colGemmMatchesDirectConvolution) {
  const Conv2dGeometry g{3, 9, 7, 3, 2, 2, 1};
  const std::int64_t out_channels = 4, spatial = g.out_h() * g.out_w();
  const auto x = random_values(g.channels * g.height * g.width, 9);
  const auto w = random_values(out_channels * g.patch(), 10);
  const auto b = random_values(out_channels, 11);
  std::vector<float> cols(g.patch() * spatial), y(out_channels * spatial), yr(y.size());
  im2col(x.data(), g, cols.data(), spatial);
  gemm(GemmShape::dense(out_channels, spatial, g.patch()), w.data(), cols.data(), y.data(), false);
  for (std::int64_t o = 0; o < out_channels; ++o) {
    for (std::int64_t s = 0; s < spatial; ++s) y[o * spatial + s] += b[o];
  }
  conv2d_ref(x.data(), w.data(), b.data(), out_channels, g, yr.data());
  expect_close(y, yr, 1e-5, 1e-5, "conv2d");
  // col2im is im2col's adjoint: <im2col(x), c> == <x, col2im(c)>.
  const auto c = random_values(cols.size(), 12);
  std::vector<float> back(x.size(), 0.0f);
  col2im(c.data(), g, back.data(), spatial);
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < cols.size(); ++i) lhs += static_cast<double>(cols[i]) * c[i];
  for (std::size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * back[i];
  EXPECT_NEAR(lhs, rhs, 1e-3);
}

}  // namespace
}  // namespace mantissa::kernels

namespace mantissa::kernels {
namespace {

TEST(KernelTwins, AdamUpdateMatchesDoubleTwin) {
  for (bool decoupled : {false, true}) {
    const std::int64_t n = 10'007;
    auto p = random_values(n, 20), g = random_values(n, 21), m = random_values(n, 22, 0.1f);
    auto v = random_values(n, 23, 0.1f);
    for (float& x : v) x = x * x;
    auto p2 = p, m2 = m, v2 = v;
    const AdamArgs a{1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, decoupled, true, 7};
    adam_update(p.data(), g.data(), m.data(), v.data(), n, a);
    adam_update_ref(p2.data(), g.data(), m2.data(), v2.data(), n, a);
    expect_close(m, m2, 1e-7, 1e-6, "adam m");
    expect_close(v, v2, 1e-9, 1e-6, "adam v");
    expect_close(p, p2, 1e-7, 1e-6, "adam p");
  }
}

}  // namespace
}  // namespace mantissa::kernels
