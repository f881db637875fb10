// A convolution's three products on every route this CPU can run (kernels/conv_route.hpp)
// against direct loops in double over the same H values, on odd shapes: stride 2, padding 0
// and 2, 1 x 1 and 5 x 5 kernels, 1 and 3 input channels, batch 1. Bound per element: any
// order of float32 sums of K exact products (the bias one more term) is within
// (K + 2) * 2^-24 * S of the exact sum, S the sum of the terms' magnitudes (Higham, "Accuracy
// and Stability of Numerical Algorithms", 2nd ed., eq. 4.4, with room for a final rounding).
// Also: which routes a convolution's key can take, its route lines, and the choice by
// measurement recording the key.
#include <gtest/gtest.h>

#include <omp.h>
#include <algorithm>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/kernels/conv_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "simd_paths.hpp"

namespace mantissa::kernels {
namespace {

constexpr double kU = 0x1p-24;

struct Case {
  std::int64_t batch, channels, height, width, out_channels, kernel, stride, padding;
  bool bias;
};

// The odd shapes the issue names, one of the Fashion CNN's, and shapes the fp32 route's direct
// kernels take (stride 1, at most 32 values a patch: conv/direct_conv.hpp): a first layer of 1
// channel with rows of 8 + 5 outputs and 17 images (two blocks of the weight gradient's
// sums), 3 channels of 3 x 3 (27 taps: three groups), 1 channel of 5 x 5 (25 taps, a short
// last group) without padding.
const Case kCases[] = {
    {1, 1, 9, 7, 4, 5, 2, 2, true},    // 5 x 5, stride 2, padding 2, 1 channel, batch 1
    {1, 3, 8, 11, 5, 1, 2, 0, false},  // 1 x 1, stride 2, padding 0, 3 channels
    {2, 3, 7, 7, 6, 5, 1, 0, true},    // 5 x 5, padding 0
    {1, 3, 6, 5, 3, 1, 1, 2, true},    // 1 x 1 with padding 2 (a border of zeros)
    {3, 16, 14, 14, 32, 3, 1, 1, true}, {17, 1, 6, 13, 5, 3, 1, 1, true},  // direct: 9 taps
    {2, 3, 9, 10, 4, 3, 1, 1, false},                                      // direct: 27 taps
    {3, 1, 12, 21, 3, 5, 1, 0, true},  // direct: 25 taps, output rows of 17
};

ConvKey key_of(const Case& c) {
  return ConvKey{c.batch,  c.channels, c.height, c.width,   c.out_channels,
                 c.kernel, c.kernel,   c.stride, c.padding, c.bias};
}

std::int64_t out_size(std::int64_t in, const Case& c) {
  return (in + 2 * c.padding - c.kernel) / c.stride + 1;
}

// n values uniform in [-1, 1], rounded to `format` (H values).
std::vector<float> h_values(std::size_t n, Format format, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  numerics::round_to_format(v.data(), v.size(), format);
  return v;
}

// Values stored packed in `format` (a half format's own width) or as float32.
struct Stored {
  std::vector<unsigned char> bytes;
  Format format;
  Stored(const std::vector<float>& v, Format f) : format(f) {
    bytes.resize(v.size() * static_cast<std::size_t>(numerics::traits(f).storage_bytes));
    numerics::encode_array(v.data(), v.size(), f, bytes.data());
  }
  Operand operand() const { return {bytes.data(), format}; }
};

// The exact sums (in double: each is a short sum of exact products of 8- to 11-bit values)
// and the sums of the terms' magnitudes, for the three products.
struct Reference {
  std::vector<double> y, sy, dx, sdx, dw, sdw, db, sdb;
  std::int64_t ky = 0, kdx = 0, kdw = 0, kdb = 0;  // terms per element (at most)
};

Reference reference(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& bias, const std::vector<float>& dy) {
  const std::int64_t oh = out_size(c.height, c), ow = out_size(c.width, c);
  Reference r;
  r.y.assign(dy.size(), 0.0), r.sy.assign(dy.size(), 0.0);
  r.dx.assign(x.size(), 0.0), r.sdx.assign(x.size(), 0.0);
  r.dw.assign(w.size(), 0.0), r.sdw.assign(w.size(), 0.0);
  r.db.assign(static_cast<std::size_t>(c.out_channels), 0.0);
  r.sdb.assign(static_cast<std::size_t>(c.out_channels), 0.0);
  r.ky = c.channels * c.kernel * c.kernel + (c.bias ? 1 : 0);
  r.kdx = c.out_channels * c.kernel * c.kernel;
  r.kdw = c.batch * oh * ow;
  r.kdb = c.batch * oh * ow;
  for (std::int64_t n = 0; n < c.batch; ++n) {
    for (std::int64_t o = 0; o < c.out_channels; ++o) {
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::size_t yi =
              static_cast<std::size_t>(((n * c.out_channels + o) * oh + oy) * ow + ox);
          if (c.bias) {
            r.y[yi] += bias[o];
            r.sy[yi] += std::fabs(bias[o]);
          }
          r.db[o] += dy[yi];
          r.sdb[o] += std::fabs(dy[yi]);
          for (std::int64_t ch = 0; ch < c.channels; ++ch) {
            for (std::int64_t i = 0; i < c.kernel; ++i) {
              for (std::int64_t j = 0; j < c.kernel; ++j) {
                const std::int64_t yy = oy * c.stride - c.padding + i;
                const std::int64_t xx = ox * c.stride - c.padding + j;
                if (yy < 0 || yy >= c.height || xx < 0 || xx >= c.width) continue;
                const std::size_t xi = static_cast<std::size_t>(
                    ((n * c.channels + ch) * c.height + yy) * c.width + xx);
                const std::size_t wi =
                    static_cast<std::size_t>(((o * c.channels + ch) * c.kernel + i) * c.kernel + j);
                const double xw = static_cast<double>(x[xi]) * w[wi];
                r.y[yi] += xw, r.sy[yi] += std::fabs(xw);
                const double gw = static_cast<double>(dy[yi]) * w[wi];
                r.dx[xi] += gw, r.sdx[xi] += std::fabs(gw);
                const double gx = static_cast<double>(dy[yi]) * x[xi];
                r.dw[wi] += gx, r.sdw[wi] += std::fabs(gx);
              }
            }
          }
        }
      }
    }
  }
  return r;
}

// Within (terms * passes + 2) u S + dropped * S of the exact sums.
void expect_within(const std::string& what, const std::vector<float>& got,
                   const std::vector<double>& exact, const std::vector<double>& mag,
                   std::int64_t terms, int passes, double dropped) {
  ASSERT_EQ(got.size(), exact.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double bound = (static_cast<double>(terms * passes + 2) * kU + dropped) * mag[i];
    if (!(std::fabs(got[i] - exact[i]) <= bound)) {
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << " vs exact " << exact[i]
                    << " (bound " << bound << ")";
      ++bad;
    }
  }
}

struct Precision {
  Format format;
  int passes;
};

// Every route of every case and precision within the bound of the exact products of the
// values each route multiplies (at POL 2 float16 inputs rounded to bfloat16 first).
void check_all_routes(const Precision& prec) {
  std::mt19937 rng(12345);
  int runs = 0;
  for (const Case& c : kCases) {
    const ConvKey shape = key_of(c);
    const std::int64_t oh = out_size(c.height, c), ow = out_size(c.width, c);
    const auto nx = static_cast<std::size_t>(c.batch * c.channels * c.height * c.width);
    const auto nw = static_cast<std::size_t>(c.out_channels * c.channels * c.kernel * c.kernel);
    const auto ny = static_cast<std::size_t>(c.batch * c.out_channels * oh * ow);
    const std::vector<float> x = h_values(nx, prec.format, rng);
    const std::vector<float> w = h_values(nw, prec.format, rng);
    const std::vector<float> dy = h_values(ny, prec.format, rng);
    std::vector<float> bias =
        h_values(static_cast<std::size_t>(c.out_channels), Format::float32, rng);
    // The values the products multiply: one bf16 pass at POL 2 rounds float16 to bfloat16.
    const bool to_bf16 =
        prec.passes == 1 && (prec.format == Format::float16 || prec.format == Format::cbfloat16);
    auto multiplied = [&](std::vector<float> v) {
      if (to_bf16) numerics::round_to_format(v.data(), v.size(), Format::bfloat16);
      return v;
    };
    const Reference ref = reference(c, multiplied(x), multiplied(w), bias, multiplied(dy));
    // The bias gradient sums dy's H values themselves (no product, nothing rounded).
    const Reference ref_db = reference(c, x, w, bias, dy);
    const Stored xs(x, prec.format), dys(dy, prec.format);  // packed in H
    const GemmPrecision p{prec.format, prec.passes, GemmAlgorithm::automatic,
                          MatmulRoute::automatic};
    for (ProductKind kind : {ProductKind::conv_forward, ProductKind::conv_backward_data,
                             ProductKind::conv_backward_weights}) {
      const GemmKey key = conv_key(kind, shape, prec.format, prec.passes, true);
      for (MatmulRoute route : routes_for(key)) {
        const std::string what = describe(key) + " on " + std::string(route_name(route));
        // mantissa's bf16 and amx GEMMs run float16 at POL 1 as 3 bf16 passes (hi*hi, hi*lo,
        // lo*hi): 3K terms, and the dropped lo*lo terms: |lo| <= 2^-8 |x| (half a bf16 ulp, a tie
        // such as 1 + 2^-8 reaching it), so within 2^-16 S.
        const bool split =
            (route == MatmulRoute::bf16 || route == MatmulRoute::amx) && prec.passes == 3;
        const int passes = split ? 3 : 1;
        const double dropped = split ? 0x1p-16 : 0.0;
        std::vector<float> y(ny, NAN), dx(nx, NAN), dw(nw, NAN), db(bias.size(), NAN);
        ConvBuffers b;
        b.x = xs.operand();
        b.w = w.data();  // float32 storage of H values
        b.dy = dys.operand();
        b.bias = c.bias ? bias.data() : nullptr;
        b.y = y.data(), b.dx = dx.data(), b.dw = dw.data(), b.db = c.bias ? db.data() : nullptr;
        conv2d_product_on(route, kind, shape, b, p);
        ++runs;
        switch (kind) {
          case ProductKind::conv_forward:
            expect_within(what, y, ref.y, ref.sy, ref.ky, passes, dropped);
            break;
          case ProductKind::conv_backward_data:
            expect_within(what, dx, ref.dx, ref.sdx, ref.kdx, passes, dropped);
            break;
          case ProductKind::conv_backward_weights:
            expect_within(what, dw, ref.dw, ref.sdw, ref.kdw, passes, dropped);
            if (c.bias)
              expect_within(what + " (bias)", db, ref_db.db, ref_db.sdb, ref_db.kdb, 1, 0);
            break;
          case ProductKind::matmul:
            break;
        }
      }
    }
  }
  EXPECT_GE(runs, 8 * 3 * 2);  // at least fp32 and onednn_fp32 everywhere
}

TEST(ConvRoutes, Float32OnEveryRouteWithinTheSummationBound) {
  check_all_routes({Format::float32, 1});
}
TEST(ConvRoutes, Bfloat16OnEveryRouteWithinTheSummationBound) {
  check_all_routes({Format::bfloat16, 1});
}
TEST(ConvRoutes, Float16AtPol1OnEveryRouteWithinTheSummationBound) {
  check_all_routes({Format::float16, 3});
}
TEST(ConvRoutes, Float16AtPol2MultipliesBfloat16RoundedValues) {
  check_all_routes({Format::float16, 1});
}

TEST(ConvRoutes, EverySimdPathWithinTheSummationBound) {
  // The direct kernels run 16 lanes wide on the avx512 path, 8 on the others: every route
  // again with each path this CPU has made active.
  testing::on_each_simd_path({numerics::SimdPath::avx2, numerics::SimdPath::avx512},
                             [](const std::string& path) {
                               SCOPED_TRACE(path);
                               check_all_routes({Format::float32, 1});
                               check_all_routes({Format::bfloat16, 1});
                               check_all_routes({Format::float16, 1});
                             });
}

TEST(ConvRoutes, DirectSumsDoNotDependOnTheThreadCount) {
  // The fp32 route's direct kernels (a first layer's shape, 40 images: three blocks of the
  // weight gradient's sums) on 1, 2 and 5 threads: the same bits.
  const Case c{40, 1, 10, 11, 6, 3, 1, 1, true};
  const ConvKey shape = key_of(c);
  std::mt19937 rng(3);
  const std::int64_t plane = out_size(c.height, c) * out_size(c.width, c);
  const std::vector<float> x = h_values(static_cast<std::size_t>(40 * 110), Format::bfloat16, rng);
  const std::vector<float> w = h_values(6 * 9, Format::bfloat16, rng);
  const std::vector<float> dy =
      h_values(static_cast<std::size_t>(40 * 6 * plane), Format::bfloat16, rng);
  const std::vector<float> bias = h_values(6, Format::float32, rng);
  const Stored xs(x, Format::bfloat16), dys(dy, Format::bfloat16);
  const GemmPrecision p{Format::bfloat16, 1, GemmAlgorithm::automatic, MatmulRoute::fp32};
  const int threads_before = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 5}) {
    omp_set_num_threads(threads);
    std::vector<float> y(dy.size()), dw(w.size()), db(6);
    ConvBuffers b;
    b.x = xs.operand(), b.w = w.data(), b.dy = dys.operand(), b.bias = bias.data();
    b.y = y.data(), b.dw = dw.data(), b.db = db.data();
    conv2d_product_on(MatmulRoute::fp32, ProductKind::conv_forward, shape, b, p);
    conv2d_product_on(MatmulRoute::fp32, ProductKind::conv_backward_weights, shape, b, p);
    y.insert(y.end(), dw.begin(), dw.end());
    y.insert(y.end(), db.begin(), db.end());
    results.push_back(y);
  }
  omp_set_num_threads(threads_before);
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4), 0);
  EXPECT_EQ(std::memcmp(results[0].data(), results[2].data(), results[0].size() * 4), 0);
}

TEST(ConvRoutes, ResultsRoundedByTheRouteAreTheRoundedFloat32Results) {
  // A forward offered y_stored: the fp32 route's direct kernels round there (bfloat16 and
  // float16), with the bits numerics::convert_array gives the float32 result; a route that
  // cannot (oneDNN's) leaves y_stored alone and fills y.
  const Case c{2, 1, 12, 41, 64, 3, 1, 1, true};  // 64 channels x 41 columns: 2 blocks of rows
  const ConvKey shape = key_of(c);
  const std::int64_t oh = out_size(c.height, c), ow = out_size(c.width, c);
  const auto ny = static_cast<std::size_t>(c.batch * c.out_channels * oh * ow);
  std::mt19937 rng(11);
  for (Format f : {Format::bfloat16, Format::float16}) {
    const std::vector<float> x = h_values(static_cast<std::size_t>(2 * 12 * 41), f, rng);
    std::vector<float> w = h_values(64 * 9, f, rng);
    w[4] = 65280.0f;  // float16 results past 65504: rounded to infinity on both sides
    const std::vector<float> bias = h_values(64, Format::float32, rng);
    const GemmPrecision p{f, 1, GemmAlgorithm::automatic, MatmulRoute::fp32};
    ConvBuffers b;
    b.x = x.data(), b.w = w.data(), b.bias = bias.data();
    std::vector<float> y32(ny);
    b.y = y32.data();
    EXPECT_FALSE(conv2d_product_on(MatmulRoute::fp32, ProductKind::conv_forward, shape, b, p));
    std::vector<std::uint16_t> expected(ny), got(ny, 0xdead);
    numerics::convert_array(y32.data(), Format::float32, ny, expected.data(), f);
    std::vector<float> untouched(ny, 7.0f);
    b.y = untouched.data();
    b.y_stored = got.data();
    b.y_format = f;
    EXPECT_TRUE(conv2d_product_on(MatmulRoute::fp32, ProductKind::conv_forward, shape, b, p));
    EXPECT_EQ(got, expected) << numerics::name(f);
    EXPECT_EQ(untouched, std::vector<float>(ny, 7.0f));
    std::fill(got.begin(), got.end(), 0xdead);
    EXPECT_FALSE(
        conv2d_product_on(MatmulRoute::onednn_fp32, ProductKind::conv_forward, shape, b, p));
    EXPECT_EQ(got, std::vector<std::uint16_t>(ny, 0xdead));
  }
}

TEST(ConvRoutes, OnednnBf16TakesOneBf16PassOnly) {
  const ConvKey shape{2, 3, 8, 8, 4, 3, 3, 1, 1, true};
  const GemmKey f32 = conv_key(ProductKind::conv_forward, shape, Format::float32, 1, true);
  EXPECT_NE(route_unavailable(MatmulRoute::onednn_bf16, f32), "");
  const GemmKey pol1 = conv_key(ProductKind::conv_forward, shape, Format::float16, 3, true);
  EXPECT_NE(route_unavailable(MatmulRoute::onednn_bf16, pol1), "");
  for (const GemmKey& k : {f32, pol1}) {
    EXPECT_TRUE(route_unavailable(MatmulRoute::fp32, k).empty());
    EXPECT_TRUE(route_unavailable(MatmulRoute::onednn_fp32, k).empty());
  }
  const GemmKey bf16 = conv_key(ProductKind::conv_forward, shape, Format::bfloat16, 1, true);
  const std::string why = route_unavailable(MatmulRoute::onednn_bf16, bf16);
  if (!why.empty()) GTEST_SKIP() << "no oneDNN bf16 convolution on this CPU: " << why;
  // Where the route exists, three passes are what keeps it from a POL 1 float16 product.
  EXPECT_NE(route_unavailable(MatmulRoute::onednn_bf16, pol1).find("one bf16 pass"),
            std::string::npos);
  const std::vector<MatmulRoute> routes = routes_for(bf16);
  EXPECT_NE(std::find(routes.begin(), routes.end(), MatmulRoute::onednn_bf16), routes.end());
}

TEST(ConvRoutes, KeyIsTheIm2colProduct) {
  const ConvKey s{128, 16, 14, 14, 32, 3, 3, 1, 1, true};  // out 14 x 14: wide 25088, patch 144
  const GemmKey f = conv_key(ProductKind::conv_forward, s, Format::bfloat16, 1, true);
  EXPECT_EQ(f.m, 32);
  EXPECT_EQ(f.n, 25088);
  EXPECT_EQ(f.k, 144);
  const GemmKey d = conv_key(ProductKind::conv_backward_data, s, Format::bfloat16, 1, true);
  EXPECT_EQ(d.m, 144);
  EXPECT_EQ(d.n, 25088);
  EXPECT_EQ(d.k, 32);
  EXPECT_TRUE(d.trans_a);
  const GemmKey w = conv_key(ProductKind::conv_backward_weights, s, Format::bfloat16, 1, true);
  EXPECT_EQ(w.m, 32);
  EXPECT_EQ(w.n, 144);
  EXPECT_EQ(w.k, 25088);
  EXPECT_TRUE(w.trans_b);
  EXPECT_THROW(conv_key(ProductKind::conv_forward, ConvKey{1, 1, 2, 2, 1, 5, 5, 1, 0, false},
                        Format::float32, 1, true),
               Error);
  EXPECT_THROW(conv_key(ProductKind::matmul, s, Format::float32, 1, true), Error);
}

// The tenth audit (fuzz_route_cache): a cache line's shape within the parser's bounds (2^40 a
// size) made counts past 2^63 - 1 (batch x out_h x out_w), and the products overflowed. Such
// shapes, and paddings whose double passes 2^63 - 1, are refused; the line is skipped.
TEST(ConvRoutes, ShapesPastA64BitCountAreRefused) {
  constexpr std::int64_t big = std::int64_t{1} << 40;
  try {
    conv_key(ProductKind::conv_forward, ConvKey{big, 1, big, big, 1, 1, 1, 1, 0, true},
             Format::float32, 1, true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "conv_key: a convolution's product of more than 2^63 - 1 columns or rows "
                 "(conv_fwd, batch 1099511627776, channels 1, 1099511627776x1099511627776, "
                 "kernel 1x1, stride 1, padding 0)");
  }
  EXPECT_THROW(
      conv_key(ProductKind::conv_backward_weights,
               ConvKey{1, big, 1, 1, 1, big, big, 1, big, false}, Format::float32, 1, true),
      Error);  // a patch of 2^120
  EXPECT_THROW(conv_key(ProductKind::conv_forward,
                        ConvKey{1, 1, 1, 1, 1, 1, 1, 1, std::int64_t{1} << 62, false},
                        Format::float32, 1, true),
               Error);  // padding 2^62: 2 x 2^62 passes 2^63 - 1
  EXPECT_FALSE(
      parse_route_record_line("conv_fwd 1099511627776 1 1099511627776 1099511627776 1 "
                              "1 1 1 0 bias 1 1 1 NN float32 1 all fp32 0 0 0 0 0"));
}

TEST(ConvRoutes, RouteLinesRoundTripAndRejectAMismatchedShape) {
  RouteRecord r;
  r.key = conv_key(ProductKind::conv_backward_weights,
                   ConvKey{128, 16, 14, 14, 32, 3, 3, 1, 1, true}, Format::bfloat16, 1, true);
  r.route = MatmulRoute::onednn_fp32;
  r.gflops[static_cast<std::size_t>(MatmulRoute::onednn_fp32)] = 81.5;
  const std::string line = route_record_line(r);
  EXPECT_EQ(line.rfind("conv_bwd_weights 128 16 14 14 32 3 3 1 1 bias 32 144 25088 NT bfloat16 1 "
                       "all onednn_fp32",
                       0),
            0u)
      << line;
  const std::optional<RouteRecord> back = parse_route_record_line(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->route, r.route);
  for (const char* bad : {
           "conv_bwd_weights 128 16 14 14 32 3 3 1 1 bias 32 144 25087 NT bfloat16 1 all fp32 1 1 "
           "1 1",
           "conv_fwd 128 16 14 14 32 3 3 1 1 bias 32 144 25088 NT bfloat16 1 all fp32 1 1 1 1",
           "conv_sideways 128 16 14 14 32 3 3 1 1 bias 32 144 25088 NT bfloat16 1 all fp32 1 1 1 1",
           "conv_bwd_weights 128 16 14 14 32 3 3 1 1 maybe 32 144 25088 NT bfloat16 1 all fp32 1 1 "
           "1 1",
           "conv_bwd_weights 128 16 14 -14 32 3 3 1 1 bias 32 144 25088 NT bfloat16 1 all fp32 1 1 "
           "1 1",
           "matmul 32 144 25088 NT bfloat16 1 all fp32 1 1 1 1",
       }) {
    EXPECT_FALSE(parse_route_record_line(bad)) << bad;
  }
}

TEST(ConvRoutes, AutomaticMeasuresEveryRouteOnceAndRecordsTheKey) {
  set_route_cache_path("");
  clear_routes();
  const ConvKey shape{2, 3, 9, 9, 8, 3, 3, 2, 1, false};
  const std::int64_t o = 5;  // (9 + 2 - 3) / 2 + 1
  std::mt19937 rng(7);
  const std::vector<float> x = h_values(2 * 3 * 81, Format::bfloat16, rng);
  const std::vector<float> w = h_values(8 * 3 * 9, Format::bfloat16, rng);
  std::vector<float> y(static_cast<std::size_t>(2 * 8 * o * o));
  ConvBuffers b;
  b.x = x.data();
  b.w = w.data();
  b.y = y.data();
  const GemmPrecision p{Format::bfloat16, 1, GemmAlgorithm::automatic, MatmulRoute::automatic};
  conv2d_product(ProductKind::conv_forward, shape, b, p);
  const GemmKey key = conv_key(ProductKind::conv_forward, shape, Format::bfloat16, 1, true);
  bool found = false;
  for (const RouteRecord& r : route_records()) {
    if (r.key != key) continue;
    found = true;
    for (MatmulRoute route : routes_for(key)) {
      EXPECT_GT(r.gflops[static_cast<std::size_t>(route)], 0.0) << route_name(route);
    }
  }
  EXPECT_TRUE(found) << describe(key);
  // The result is the product's, whichever route won: the forward against the double sum.
  const Reference ref = reference(Case{2, 3, 9, 9, 8, 3, 2, 1, false}, x, w, {}, y);
  expect_within("automatic", y, ref.y, ref.sy, ref.ky, 1, 0);
  clear_routes();
}

}  // namespace
}  // namespace mantissa::kernels
