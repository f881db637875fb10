// The ops' rounding sites on a sampled step (precision/quant_probe.hpp) and the overflow
// attribution of a watched backward (autograd/nonfinite_watch.hpp). Inputs are chosen so that
// every float32 sum is exact and every rounding to float16 is decided by hand (float16: 11
// significant bits, min normal 2^-14, min subnormal 2^-24, max 65504; ties to even).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/precision/quant_probe.hpp"

namespace mantissa::autograd {
namespace {

using precision::QuantProbe;
using precision::QuantRole;

Variable leaf(const Shape& shape, const std::vector<float>& values, bool grad = true) {
  Tensor t = Tensor::empty(shape);
  std::copy(values.begin(), values.end(), t.f32());
  return Variable(t, grad);
}

precision::LayerName name(const char* n) {
  return std::make_shared<const std::string>(n);
}

const QuantProbe::Entry* find(const std::vector<QuantProbe::Entry>& e, const std::string& layer,
                              const std::string& op, QuantRole role) {
  for (const QuantProbe::Entry& x : e) {
    if (x.layer == layer && x.op == op && x.role == role) return &x;
  }
  return nullptr;
}

long double p2(int e) {
  return std::ldexp(1.0L, e);
}

TEST(PrecisionProbe, LinearForwardSitesInFloat16ByHand) {
  const Variable x = leaf({2, 2}, {1, 0, 0, 1}, false);  // exact in float16
  const Variable w = leaf({2, 2}, {1, std::ldexp(1.0f, -26), std::ldexp(1.0f, -20), 1});
  const Variable b = leaf({2}, {std::ldexp(1.0f, -11), 3 * std::ldexp(1.0f, -11)});
  QuantProbe probe;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    const precision::ProbeScope on(&probe);
    const precision::LayerScope layer(name("lin"));
    linear(x, w, b);
  }
  const auto e = probe.entries();
  const QuantProbe::Entry* in = find(e, "lin", "linear", QuantRole::input);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->stats.counts().elements, 4);
  EXPECT_FALSE(in->stats.snr_db().has_value());  // the identity is exact
  // The weight: 2^-26 flushes (below 2^-25, half the smallest subnormal), 2^-20 is kept as a
  // subnormal.
  const QuantProbe::Entry* wt = find(e, "lin", "linear", QuantRole::weight);
  ASSERT_NE(wt, nullptr);
  EXPECT_EQ(wt->stats.format(), Format::float16);
  EXPECT_EQ(wt->stats.counts().flushed, 1);
  EXPECT_EQ(wt->stats.counts().subnormal, 1);
  EXPECT_DOUBLE_EQ(wt->stats.noise(), static_cast<double>(p2(-52)));
  EXPECT_DOUBLE_EQ(wt->stats.signal(), static_cast<double>(2 + p2(-52) + p2(-40)));
  // y = x w16^T + b in float32: [[1 + 2^-11, 2^-20 + 3 2^-11], [2^-11, 1 + 3 2^-11]]. To
  // float16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 (to 1), 1 + 3 2^-11 one between
  // 1 + 2^-10 and 1 + 2^-9 (to 1 + 2^-9); the other two are float16 values.
  const QuantProbe::Entry* out = find(e, "lin", "linear", QuantRole::output);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->stats.counts().elements, 4);
  EXPECT_EQ(out->stats.counts().flushed, 0);
  const long double a = 1 + p2(-11), c = p2(-20) + 3 * p2(-11), d = p2(-11), f = 1 + 3 * p2(-11);
  EXPECT_DOUBLE_EQ(out->stats.noise(), static_cast<double>(2 * p2(-22)));
  EXPECT_DOUBLE_EQ(out->stats.signal(), static_cast<double>(a * a + c * c + d * d + f * f));
  EXPECT_NEAR(*out->stats.snr_db(),
              static_cast<double>(10 * std::log10((a * a + c * c + d * d + f * f) / (2 * p2(-22)))),
              1e-9);
}

TEST(PrecisionProbe, BackwardSitesCarryTheLayerOfTheirForward) {
  // h = x w1^T in layer a, y = h w2^T in layer b, loss = sum(y): y's gradient is 1, so h's is
  // the column sums of w2: [1 + 2^-11, 2] per row, made by b's backward in float16 (h's
  // receiver, a, runs in float16): 1 + 2^-11 ties to 1.
  const Variable x = leaf({2, 2}, {1, 0, 0, 1}, false);
  const Variable w1 = leaf({2, 2}, {1, 0, 0, 1});
  const Variable w2 = leaf({2, 2}, {1, 2, std::ldexp(1.0f, -11), 0});
  QuantProbe probe;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    const precision::ProbeScope on(&probe);
    Variable h, y;
    {
      const precision::LayerScope layer(name("a"));
      h = linear(x, w1, Variable());
    }
    {
      const precision::LayerScope layer(name("b"));
      y = linear(h, w2, Variable());
    }
    backward(sum(y));  // outside both scopes: the nodes remember theirs
  }
  const auto e = probe.entries();
  const QuantProbe::Entry* dh = find(e, "b", "linear", QuantRole::input_grad);
  ASSERT_NE(dh, nullptr);
  EXPECT_EQ(dh->stats.counts().elements, 4);
  EXPECT_DOUBLE_EQ(dh->stats.noise(), static_cast<double>(2 * p2(-22)));
  const long double s = 1 + p2(-11);
  EXPECT_DOUBLE_EQ(dh->stats.signal(), static_cast<double>(2 * (s * s + 4)));
  // The weights' gradients stay float32 (leaves): nothing rounded, nothing recorded for them.
  // Outside both layers only the loss's gradient was rounded to float16, on arrival at sum.
  EXPECT_EQ(find(e, "a", "linear", QuantRole::input_grad), nullptr);
  for (const QuantProbe::Entry& site : e) {
    EXPECT_TRUE(site.layer == "a" || site.layer == "b" || (site.layer.empty() && site.op == "sum"))
        << site.layer << " " << site.op;
  }
  EXPECT_NE(find(e, "", "sum", QuantRole::grad), nullptr);
}

TEST(PrecisionProbe, Fp8CastsRecordTheirScaleAndAgreeWithTheCastCounts) {
  const Variable x = leaf({1, 4}, {500, 1, std::ldexp(1.0f, -10), -1000}, false);
  const Variable w = leaf({1, 4}, {1, 1, 1, 1});
  precision::Fp8Settings fp8;
  fp8.enabled = true;
  const auto meta = std::make_shared<precision::Fp8Meta>(fp8);
  QuantProbe probe;
  {
    precision::Policy p(Format::bfloat16);
    p.fp8 = fp8;
    const precision::Autocast cast(p);
    const precision::ProbeScope on(&probe);
    const precision::LayerScope layer(name("f"));
    linear(x, w, Variable(), meta);
  }
  const std::vector<QuantProbe::Entry> entries = probe.entries();  // a copy: keep it alive
  const QuantProbe::Entry* in = find(entries, "f", "linear_fp8", QuantRole::input);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->stats.format(), Format::float8_e4m3);
  EXPECT_EQ(in->stats.counts().saturated, 2);  // 500 and -1000 past 448
  EXPECT_EQ(in->stats.counts().flushed, 1);    // 2^-10: half of e4m3's smallest, to 0 (even)
  ASSERT_TRUE(in->stats.scale_range().has_value());
  EXPECT_EQ(in->stats.scale_range()->min, 1.0);  // scales start at 1
  const auto figures = meta->step_figures();
  EXPECT_EQ(figures.counts[0].overflows, in->stats.counts().saturated);
  EXPECT_EQ(figures.counts[0].underflows, in->stats.counts().flushed);
  EXPECT_NE(find(entries, "f", "linear_fp8", QuantRole::output), nullptr);
}

TEST(PrecisionProbe, NothingIsRecordedWithoutAProbe) {
  const Variable x = leaf({2, 2}, {1, 2, 3, 4}, false);
  const Variable w = leaf({2, 2}, {1, std::ldexp(1.0f, -26), 0, 1});
  QuantProbe probe;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    linear(x, w, Variable());  // no ProbeScope
  }
  EXPECT_TRUE(probe.entries().empty());
  EXPECT_EQ(precision::active_probe(), nullptr);
}

// --- Overflow attribution -------------------------------------------------------------

TEST(NonfiniteWatch, NamesTheLayerWhoseBackwardOverflowed) {
  // Three float16 layers; l1's weights are 2^14: its forward stays finite (h1 ~ 0.02 * 2^14 *
  // 4), its backward multiplies the gradient by 4 x 2^14 and overflows 65504, and every
  // gradient before it (l0's weight's among them) is then inf or NaN.
  const Variable x = leaf({2, 4}, std::vector<float>(8, 0.01f), false);
  const Variable w0 = leaf({4, 4}, std::vector<float>(16, 0.5f));
  const Variable w1 = leaf({4, 4}, std::vector<float>(16, 16384.0f));
  const Variable w2 = leaf({4, 4}, std::vector<float>(16, 0.25f));
  NonfiniteWatch watch;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    Variable h;
    {
      const precision::LayerScope l(name("l0"));
      h = relu(linear(x, w0, Variable()));
    }
    {
      const precision::LayerScope l(name("l1"));
      h = relu(linear(h, w1, Variable()));
    }
    {
      const precision::LayerScope l(name("l2"));
      h = linear(h, w2, Variable());
    }
    const Variable loss = scale(sum(h), 4.0f);  // a loss scale
    ASSERT_TRUE(std::isfinite(loss.value().item()));
    backward(loss);
  }
  ASSERT_TRUE(watch.first().has_value());
  EXPECT_EQ(*watch.first(), (NonfiniteOrigin{"linear", "l1", NonfiniteGradient::input_grad}));
  EXPECT_EQ(describe(*watch.first()), "the backward of linear in l1");
  // Where it spread: l0's weight gradient.
  bool spread = false;
  for (std::int64_t i = 0; i < w0.grad().numel(); ++i) spread |= !std::isfinite(w0.grad().f32()[i]);
  EXPECT_TRUE(spread);
  // A second backward that stays finite finds nothing once reset.
  watch.reset();
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    backward(sum(linear(x, w0, Variable())));
  }
  EXPECT_FALSE(watch.first().has_value());
  // What a watch reads: the loss's gradient rounded to float16 on arrival at sum (2 bytes), the
  // [2, 4] float32 gradient sum makes for the linear layer (32 bytes) and its rounding to
  // float16 on arrival there (16 bytes); the weight's gradient goes to a leaf and is the
  // optimizer's to check.
  NonfiniteWatch fresh;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    backward(sum(linear(x, w0, Variable())));
  }
  EXPECT_EQ(fresh.bytes_read(), 2 + 32 + 16);
}

TEST(NonfiniteWatch, NamesAnOutputGradientWhoseSumOverflowedOnArrival) {
  // h feeds two products: each sends h a finite float32 gradient of 40000, their sum (80000)
  // is past float16's max and becomes inf when rounded on arrival at h's op.
  const Variable x = leaf({1, 1}, {0.001f}, false);
  const Variable w = leaf({1, 1}, {1.0f});
  const Variable a = leaf({1, 1}, {40000.0f}), c = leaf({1, 1}, {40000.0f});
  NonfiniteWatch watch;
  {
    const precision::Autocast cast(precision::Policy(Format::float16));
    Variable h;
    {
      const precision::LayerScope l(name("h"));
      h = linear(x, w, Variable());
    }
    Variable y1, y2;
    {
      const precision::LayerScope l(name("p"));
      y1 = linear(h, a, Variable());
    }
    {
      const precision::LayerScope l(name("q"));
      y2 = linear(h, c, Variable());
    }
    backward(add(sum(y1), sum(y2)));
  }
  ASSERT_TRUE(watch.first().has_value());
  EXPECT_EQ(*watch.first(), (NonfiniteOrigin{"linear", "h", NonfiniteGradient::output_grad}));
  EXPECT_EQ(describe(*watch.first()),
            "the output gradient of linear in h, rounded to the half format");
}

}  // namespace
}  // namespace mantissa::autograd
