// linear under the block-scaled and current-scaled recipes (precision/recipe.hpp): forward,
// input gradient and weight gradient against an independent reference. The reference
// quantizes each operand with the numerics quantizers' scalar twins (checked bit for bit
// against ml_dtypes fixtures and exact arithmetic in tests/numerics), choosing the copy each
// product takes from the recipes' definitions written again here (row-wise x and W forward;
// g row-wise and W column-wise for dx; g and x column-wise, or transposed, padded and
// rotated for nvfp4, for dW), dequantizes by exact arithmetic in double and multiplies in
// double. The op's float32 sums must lie within (K + 4) u of the exact sum's magnitude (u =
// 2^-24), plus half a bfloat16 spacing for the bfloat16 output.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "gradcheck.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/precision/recipe.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::BlockQuantized;
using numerics::Format;
using precision::Fp8Slot;
using precision::Recipe;

constexpr std::uint64_t kSeed = 77;

// A dense matrix of exact values (element * tile scale in double) and the tensor scale.
struct Exact {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double tensor_scale = 1.0;
  double at(std::int64_t r, std::int64_t c) const {
    return v[static_cast<std::size_t>(r * cols + c)];
  }
};

Exact exact(const BlockQuantized& q) {
  Exact e{q.rows, q.cols, {}, q.tensor_scale};
  const numerics::Layout& l = numerics::layout(q.element);
  for (std::int64_t r = 0; r < q.rows; ++r) {
    for (std::int64_t c = 0; c < q.cols; ++c) {
      const std::int64_t i = r * q.cols + c;
      const std::uint32_t code =
          q.element == Format::float4_e2m1
              ? (q.elements[static_cast<std::size_t>(i / 2)] >> (4 * (i % 2))) & 0xfu
              : q.elements[static_cast<std::size_t>(i)];
      const double s = q.scales[static_cast<std::size_t>((r / q.tile.rows) * q.tile_grid_cols() +
                                                         c / q.tile.cols)];
      e.v.push_back(static_cast<double>(numerics::decode(code, l)) * s);
    }
  }
  return e;
}

// The recipe's copy of the float32 matrix x [rows, cols] for `role`, tiles along the last
// dimension (row-wise) or along the rows (column-wise), written from the recipes'
// definitions; `counter` is the stochastic stream's position, advanced as the op takes it.
BlockQuantized reference_copy(const precision::LayerRecipe& r, Fp8Slot role, bool rowwise,
                              const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                              std::uint64_t& counter) {
  const std::int64_t b = r.block_size;
  const numerics::TileShape along = rowwise ? numerics::TileShape{1, b} : numerics::TileShape{b, 1};
  switch (r.recipe) {
    case Recipe::current:
    case Recipe::blockwise: {
      numerics::Fp8BlockSettings s;
      s.element = r.format(role);
      s.power_of_two = r.power_of_two_scales;
      s.tile = r.recipe == Recipe::current ? numerics::TileShape{rows, cols}
               : role == Fp8Slot::weight   ? numerics::TileShape{b, b}
                                           : along;
      return numerics::quantize_fp8_blocks_ref(x.data(), rows, cols, s);
    }
    case Recipe::nvfp4: {
      numerics::Nvfp4Settings s;
      s.tile = role == Fp8Slot::weight
                   ? numerics::TileShape{16, 16}
                   : (rowwise ? numerics::TileShape{1, 16} : numerics::TileShape{16, 1});
      if (role == Fp8Slot::grad && r.stochastic_rounding) {
        s.rounding = numerics::Rounding::stochastic;
        s.seed = kSeed;
        s.counter = counter;
        counter += static_cast<std::uint64_t>(rows * cols);
      }
      return numerics::quantize_nvfp4_ref(x.data(), rows, cols, s);
    }
    default: {
      numerics::MxSettings s;
      s.element = r.format(role);
      s.rule = r.scale_rule;
      s.tile = along;
      return numerics::quantize_mx_ref(x.data(), rows, cols, s);
    }
  }
}

// x [rows, cols] transposed to [cols, rows_padded] with zero rows appended, quantized
// 1 x 16 with the rotation (nvfp4's weight-gradient operands).
BlockQuantized rotated_copy(const precision::LayerRecipe& r, Fp8Slot role,
                            const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                            std::uint64_t& counter) {
  const std::int64_t padded = (rows + 15) / 16 * 16;
  std::vector<float> t(static_cast<std::size_t>(cols * padded), 0.0f);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t c = 0; c < cols; ++c) t[c * padded + i] = x[i * cols + c];
  }
  numerics::Nvfp4Settings s;
  s.hadamard = true;
  if (role == Fp8Slot::grad && r.stochastic_rounding) {
    s.rounding = numerics::Rounding::stochastic;
    s.seed = kSeed;
    s.counter = counter;
    counter += static_cast<std::uint64_t>(cols * padded);
  }
  return numerics::quantize_nvfp4_ref(t.data(), cols, padded, s);
}

// Checks got[i * n + j] against sum_k a(i, k) b(k, j) * scales, within the bound.
template <class A, class B>
void expect_product(const char* what, const std::vector<float>& got, std::int64_t m, std::int64_t n,
                    std::int64_t k, A a, B b, double factor, double rel_out,
                    const std::vector<float>& bias = {}) {
  const double u = std::ldexp(1.0, -24);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double t = a(i, p) * b(p, j);
        acc += t;
        mag += std::fabs(t);
      }
      const double bj = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(j)];
      const double want = acc * factor + bj;
      const double bound = rel_out * std::fabs(want) +
                           (k + 4) * u * (mag * std::fabs(factor) + std::fabs(bj)) + 1e-30;
      ASSERT_NEAR(got[static_cast<std::size_t>(i * n + j)], want, bound)
          << what << " (" << i << ", " << j << ")";
    }
  }
}

struct Case {
  const char* label;
  precision::RecipeSettings settings;
  precision::MatmulRoute route = precision::MatmulRoute::automatic;
};

void check_recipe(const Case& c, std::int64_t rows, std::int64_t in, std::int64_t out) {
  SCOPED_TRACE(c.label);
  const precision::LayerRecipe r = precision::resolve(c.settings, c.settings.recipe);
  auto stream = std::make_shared<precision::StochasticStream>(kSeed);
  auto quant = std::make_shared<precision::LinearQuant>(r, stream);
  precision::Fp8Settings on;
  on.enabled = true;
  precision::Autocast cast(precision::Policy(Format::bfloat16, 1, c.route, on));
  const Tensor xt = random_tensor({rows, in}, 11, -3, 3),
               wt = random_tensor({out, in}, 12, -0.5, 0.5);
  const Tensor bt = random_tensor({out}, 13), rt = random_tensor({rows, out}, 14, -2, 2);
  const Variable x(xt, true), w(wt, true), b(bt, true);
  const Variable y = ag::linear(x, w, b, quant);
  ag::backward(ag::sum(ag::mul(y, Variable(rt))));
  EXPECT_EQ(y.value().format(), Format::bfloat16);

  const std::vector<float> xv = xt.to_vector(), wv = wt.to_vector(), bv = bt.to_vector();
  std::vector<float> g = rt.to_vector();  // arrives in bfloat16, the H the op ran under
  numerics::round_to_format(g.data(), g.size(), Format::bfloat16);
  std::uint64_t counter = 0;
  const double out_rel = std::ldexp(1.0, -8);
  // y = Q_row(x) Q_row(W)^T * tensor scales + b
  const Exact xr = exact(reference_copy(r, Fp8Slot::input, true, xv, rows, in, counter));
  const Exact wr = exact(reference_copy(r, Fp8Slot::weight, true, wv, out, in, counter));
  expect_product(
      "y", y.value().to_vector(), rows, out, in, [&](auto i, auto p) { return xr.at(i, p); },
      [&](auto p, auto j) { return wr.at(j, p); }, xr.tensor_scale * wr.tensor_scale, out_rel, bv);
  // dx = Q_row(g) Q_col(W): the backward quantizes g for dx first, then for dW.
  const Exact gr = exact(reference_copy(r, Fp8Slot::grad, true, g, rows, out, counter));
  const Exact wc = exact(reference_copy(r, Fp8Slot::weight, false, wv, out, in, counter));
  expect_product(
      "dx", x.grad().to_vector(), rows, in, out, [&](auto i, auto p) { return gr.at(i, p); },
      [&](auto p, auto j) { return wc.at(p, j); }, gr.tensor_scale * wc.tensor_scale, 0.0);
  // dW = Q_col(g)^T Q_col(x), or the rotated transposes for nvfp4 with hadamard.
  if (r.recipe == Recipe::nvfp4 && r.hadamard) {
    std::uint64_t xc_counter = 0;  // x's copy takes no stochastic positions
    const Exact xc = exact(rotated_copy(r, Fp8Slot::input, xv, rows, in, xc_counter));
    const Exact gc = exact(rotated_copy(r, Fp8Slot::grad, g, rows, out, counter));
    expect_product(
        "dW", w.grad().to_vector(), out, in, gc.cols, [&](auto o, auto t) { return gc.at(o, t); },
        [&](auto t, auto i) { return xc.at(i, t); }, gc.tensor_scale * xc.tensor_scale, 0.0);
  } else {
    const bool one = r.recipe == Recipe::current;  // one scale per tensor: one copy
    const Exact gc =
        one ? gr : exact(reference_copy(r, Fp8Slot::grad, false, g, rows, out, counter));
    const Exact xc = exact(reference_copy(r, Fp8Slot::input, false, xv, rows, in, counter));
    expect_product(
        "dW", w.grad().to_vector(), out, in, rows, [&](auto o, auto t) { return gc.at(t, o); },
        [&](auto t, auto i) { return xc.at(t, i); }, gc.tensor_scale * xc.tensor_scale, 0.0);
  }
  EXPECT_EQ(stream->position(), counter) << "the stochastic stream's position";
  for (std::int64_t o = 0; o < out; ++o) {  // the bias gradient from the bfloat16 gradient
    double sum = 0;
    for (std::int64_t i = 0; i < rows; ++i) sum += g[static_cast<std::size_t>(i * out + o)];
    ASSERT_NEAR(b.grad().to_vector()[static_cast<std::size_t>(o)], sum, 1e-4);
  }
}

precision::RecipeSettings recipe(Recipe r) {
  precision::RecipeSettings s;
  s.recipe = r;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"current", recipe(Recipe::current)});
  auto current_p2 = recipe(Recipe::current);
  current_p2.power_of_two_scales = true;
  out.push_back({"current, powers of two", current_p2});
  auto block = recipe(Recipe::blockwise);
  block.block_size = 32;  // chunks of 32 along every reduction dimension
  out.push_back({"blockwise 32, powers of two", block});
  block.power_of_two_scales = false;
  out.push_back({"blockwise 32, float32 scales (chunk route)", block});
  auto block_e5m2 = block;
  block_e5m2.formats[2] = Format::float8_e5m2;
  out.push_back({"blockwise 32, float32 scales, e5m2 gradients", block_e5m2});
  for (Recipe mx : {Recipe::mxfp8, Recipe::mxfp6, Recipe::mxfp4}) {
    for (auto rule : {numerics::MxScaleRule::floor, numerics::MxScaleRule::rceil,
                      numerics::MxScaleRule::ceil, numerics::MxScaleRule::even}) {
      auto s = recipe(mx);
      s.scale_rule = rule;
      out.push_back({"mx", s});
    }
  }
  auto mixed = recipe(Recipe::mxfp4);
  mixed.formats[2] = Format::float8_e5m2;  // fp4 forward, fp8 gradients
  out.push_back({"mxfp4 with e5m2 gradients", mixed});
  out.push_back({"nvfp4 (rotation, stochastic gradients)", recipe(Recipe::nvfp4)});
  auto plain = recipe(Recipe::nvfp4);
  plain.hadamard = false;
  plain.stochastic_rounding = false;
  out.push_back({"nvfp4 without rotation or stochastic rounding", plain});
  return out;
}

TEST(LinearQuant, EveryRecipeMatchesExactArithmeticOnItsQuantizedCopies) {
  // rows 40: a last column-wise block of 8 (MX, blockwise) and 8 zero rows of padding before
  // the rotation (nvfp4).
  for (const Case& c : cases()) check_recipe(c, 40, 64, 32);
}

TEST(LinearQuant, EveryRouteGivesTheExactProducts) {
  for (precision::MatmulRoute route : kernels::routes_for(Format::bfloat16)) {
    for (Case c : {Case{"mxfp8", recipe(Recipe::mxfp8)}, Case{"nvfp4", recipe(Recipe::nvfp4)}}) {
      c.route = route;
      check_recipe(c, 32, 32, 48);
    }
  }
  auto block = recipe(Recipe::blockwise);
  block.block_size = 16;
  block.power_of_two_scales = false;
  for (precision::MatmulRoute route : kernels::routes_for(Format::float8_e4m3)) {
    check_recipe({"blockwise chunks", block, route}, 32, 48, 32);
    // one float32 scale per tensor: on onednn_bf16 the backward converts g's codes once
    check_recipe({"current", recipe(Recipe::current), route}, 32, 48, 32);
  }
}

TEST(LinearQuant, WeightCopiesAreMadeOncePerWeightVersion) {
  const precision::LayerRecipe r = precision::resolve(recipe(Recipe::mxfp4), Recipe::mxfp4);
  auto quant = std::make_shared<precision::LinearQuant>(r, nullptr);
  precision::Fp8Settings on;
  on.enabled = true;
  precision::Autocast cast(
      precision::Policy(Format::bfloat16, 1, precision::MatmulRoute::automatic, on));
  Variable w(random_tensor({32, 64}, 3), true);
  const Variable x(random_tensor({8, 64}, 4));
  const std::vector<float> y1 = ag::linear(x, w, Variable(), quant).value().to_vector();
  const precision::LinearQuantCache* first = quant->cache().get();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ag::linear(x, w, Variable(), quant).value().to_vector(), y1);
  EXPECT_EQ(quant->cache().get(), first);  // the same copies
  w.mutable_value().f32()[0] += 1.0f;      // an optimizer step changes the weight
  w.bump_version();
  EXPECT_NE(ag::linear(x, w, Variable(), quant).value().to_vector(), y1);
  EXPECT_NE(quant->cache().get(), first);
}

TEST(LinearQuant, WithoutFp8InThePolicyItIsThePlainLinear) {
  const precision::LayerRecipe r = precision::resolve(recipe(Recipe::mxfp4), Recipe::mxfp4);
  auto quant = std::make_shared<precision::LinearQuant>(r, nullptr);
  const Tensor xt = random_tensor({4, 32}, 7), wt = random_tensor({3, 32}, 8);
  precision::Autocast cast({Format::bfloat16, 1});
  EXPECT_EQ(ag::linear(Variable(xt), Variable(wt), Variable(), quant).value().to_vector(),
            ag::linear(Variable(xt), Variable(wt), Variable()).value().to_vector());
}

}  // namespace
}  // namespace mantissa::testing
