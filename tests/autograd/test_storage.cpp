// How ops store what they make and keep: under a half policy every result, saved tensor and
// gradient between ops is held in H's own width (2 bytes, 1 for fp8), a node keeps only what
// its backward reads, and a node's saved tensors are freed once its backward has run.
#include <gtest/gtest.h>

#include <set>

#include "gradcheck.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/tensor/storage.hpp"
#include "simd_paths.hpp"

namespace mantissa::testing {
namespace {

namespace ag = autograd;
using numerics::Format;

std::uint64_t live_bytes() {
  return tensor::pool_stats().live_bytes;
}

TEST(Storage, ResultsAreStoredInHsOwnWidth) {
  for (Format h : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
    precision::Autocast cast({h, 1});
    const Variable x(random_tensor({16, 64}, 1), true);
    const Variable w(random_tensor({32, 64}, 2), true);
    const Variable y = ag::gelu(ag::linear(x, w, Variable()));
    EXPECT_EQ(y.value().format(), h);
    EXPECT_EQ(y.value().element_bytes(), 2);
    // The weight's H copy is packed too, made once per version.
    const Tensor& copy = w.value_rounded_to(h);
    EXPECT_EQ(copy.format(), h);
    EXPECT_TRUE(w.value_rounded_to(h).shares_storage(copy));
  }
  // Mixed precision off: float32 results.
  const Variable x(random_tensor({4, 8}, 3), true);
  EXPECT_EQ(ag::relu(x).value().format(), Format::float32);
}

TEST(Storage, GradientsBetweenOpsArriveInH) {
  // A probe op records the format its backward receives.
  struct Probe : autograd::Node {
    Format seen = Format::float32;
    const char* name() const override { return "probe"; }
    std::vector<Tensor> apply(const Tensor& g) override {
      seen = g.format();
      return {g};
    }
  };
  precision::Autocast cast({Format::bfloat16, 1});
  const Variable x(random_tensor({8, 8}, 4), true);
  auto probe = std::make_shared<Probe>();
  probe->next.push_back(x.edge());
  probe->policy = precision::current_policy();
  Variable p(ag::relu(x).value());
  p.set_grad_fn(probe);
  ag::backward(ag::sum(ag::relu(p)));
  EXPECT_EQ(probe->seen, Format::bfloat16);
  EXPECT_EQ(x.grad().format(), Format::float32);  // leaves accumulate in float32
}

// A probe receiving a gradient from linear layers: records its format and values.
struct GradientProbe : autograd::Node {
  Format seen = Format::float32;
  std::vector<float> values;
  const char* name() const override { return "probe"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    seen = g.format();
    values = g.to_vector();
    return {g};
  }
};

// An input x0 whose producer is a probe (so that the op reading it has one sender and makes its
// gradient in H), and the leaf behind the probe.
struct ProbedInput {
  Variable leaf, input;
  std::shared_ptr<GradientProbe> probe = std::make_shared<GradientProbe>();
  explicit ProbedInput(const Tensor& x0) : leaf(x0.clone(), true), input(x0.clone()) {
    probe->next.push_back(leaf.edge());
    probe->policy = precision::current_policy();
    input.set_grad_fn(probe);
  }
};

// v rounded to h to nearest-even by the scalar codec.
std::vector<float> rounded(std::vector<float> v, Format h) {
  std::vector<std::uint8_t> bits(v.size() * 4);
  numerics::encode_array_ref(v.data(), v.size(), h, bits.data());
  numerics::decode_array_ref(bits.data(), v.size(), h, v.data());
  return v;
}

// dx = G W for linear's backward, by the scalar GEMM twin: G [rows, out], W [out, in].
std::vector<float> input_gradient(const std::vector<float>& g, const std::vector<float>& w,
                                  std::int64_t rows, std::int64_t in, std::int64_t out) {
  std::vector<float> dx(static_cast<std::size_t>(rows * in));
  kernels::gemm_ref(kernels::GemmShape::dense(rows, in, out), g.data(), w.data(), dx.data(), false);
  return dx;
}

TEST(Storage, ASingleSendersGradientIsMadeInHWithTheBitsTheReceiverWouldRound) {
  // The receiver of one gradient gets it in H, made by its sender (linear's GEMM epilogue):
  // exactly round_H(G W_H) with G = round_H(R), the float32 product rounded once. Two
  // senders: their float32 products are summed, and the sum is rounded once.
  constexpr std::int64_t rows = 24, in = 40, out = 56;
  const Tensor x0 = random_tensor({rows, in}, 11);
  const Tensor w1 = random_tensor({out, in}, 12), w2 = random_tensor({out, in}, 13);
  const Tensor r1 = random_tensor({rows, out}, 14), r2 = random_tensor({rows, out}, 15);
  for (Format h : {Format::bfloat16, Format::float16, Format::cbfloat16}) {
    const std::vector<float> g1 = rounded(r1.to_vector(), h), g2 = rounded(r2.to_vector(), h);
    const std::vector<float> p1 = input_gradient(g1, rounded(w1.to_vector(), h), rows, in, out);
    const std::vector<float> p2 = input_gradient(g2, rounded(w2.to_vector(), h), rows, in, out);
    for (int senders : {1, 2}) {
      precision::Autocast cast({h, 1});
      const ProbedInput in(x0);
      const Variable& p = in.input;
      const auto& probe = in.probe;
      const Variable a(w1.clone(), true), b(w2.clone(), true);
      Variable loss = ag::sum(ag::mul(ag::linear(p, a, Variable()), Variable(r1)));
      if (senders == 2) {
        loss = ag::add(loss, ag::sum(ag::mul(ag::linear(p, b, Variable()), Variable(r2))));
      }
      ag::backward(loss);
      std::vector<float> want = p1;
      if (senders == 2) {
        for (std::size_t i = 0; i < want.size(); ++i) want[i] += p2[i];
      }
      want = rounded(want, h);
      EXPECT_EQ(probe->seen, h) << numerics::name(h) << ", " << senders << " sender(s)";
      ASSERT_EQ(probe->values.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(probe->values[i], want[i])
            << numerics::name(h) << ", " << senders << " sender(s), element " << i;
      }
    }
  }
}

TEST(Storage, ReluMaxPoolOfBfloat16ValuesIsTheFloat32PoolOfThem) {
  // relu_max_pool2d of a bfloat16 input under bfloat16 (the kernels on bit patterns where the
  // CPU has AVX-512, the float32 tiles elsewhere): the output is the float32 pool of the
  // decoded input, and the gradient its one sender makes for it the scatter of dy =
  // round(r), both exact in bfloat16. Odd height and width, 7 windows a row.
  const Shape xs{2, 3, 9, 15}, ys{2, 3, 4, 7};
  const Tensor x0 = random_tensor(xs, 21).to(Format::bfloat16);
  const Tensor r = random_tensor(ys, 22);
  const std::vector<float> xv = x0.to_vector();
  const std::int64_t planes = 6, in_size = 9 * 15, out_size = 4 * 7;
  std::vector<float> y_ref(static_cast<std::size_t>(planes * out_size));
  std::vector<std::int32_t> at(y_ref.size());
  kernels::relu_max_pool2d_forward_ref(xv.data(), planes, 9, 15, 2, 2, y_ref.data(), at.data());
  const std::vector<float> dy = rounded(r.to_vector(), Format::bfloat16);
  std::vector<float> dx_ref(xv.size());
  kernels::relu_max_pool2d_backward_ref(dy.data(), at.data(), planes, in_size, out_size,
                                        dx_ref.data());
  on_each_simd_path(kEverySimdPath, [&](const std::string& path) {
    precision::Autocast cast({Format::bfloat16, 1});
    const ProbedInput in(x0);
    const auto& probe = in.probe;
    const Variable y = ag::relu_max_pool2d(in.input, 2, 2);
    EXPECT_EQ(y.value().format(), Format::bfloat16) << path;
    EXPECT_EQ(y.value().to_vector(), y_ref) << path;
    ag::backward(ag::sum(ag::mul(y, Variable(r))));
    EXPECT_EQ(probe->seen, Format::bfloat16) << path;
    EXPECT_EQ(probe->values, dx_ref) << path;
  });
}

TEST(Storage, NodesKeepOnlyWhatTheirBackwardReads) {
  precision::Autocast cast({Format::bfloat16, 1});
  const Variable x(random_tensor({256, 256}, 5), true);
  Variable a = ag::scale(x, 2.0f);  // 128 KiB in bfloat16
  Variable b = ag::scale(x, 3.0f);
  const Variable c = ag::add(a, b);  // add's backward reads neither input
  const std::uint64_t before = live_bytes();
  a = Variable();
  b = Variable();
  EXPECT_LE(live_bytes() + 2 * 256 * 256 * 2, before) << "add kept its inputs alive";
  // A product keeps its inputs (its backward reads them).
  Variable u = ag::scale(x, 2.0f);
  const Variable v = ag::matmul(u, u);
  const std::uint64_t with_u = live_bytes();
  u = Variable();
  EXPECT_EQ(live_bytes(), with_u);
  ag::backward(ag::sum(ag::add(c, v)));
  EXPECT_TRUE(x.grad().defined());
}

TEST(Storage, SavedTensorsAreFreedAsTheBackwardRunsAndOnlyOnce) {
  // No cached blocks from earlier tests: the pool may lend a cached block of up to twice a
  // request's size, which live_bytes would count in full.
  tensor::pool_trim();
  precision::Autocast cast({Format::bfloat16, 1});
  const Variable x(random_tensor({128, 128}, 6), true);
  const std::uint64_t base = live_bytes();
  std::uint64_t after_backward = 0;
  {
    Variable h = ag::gelu(ag::scale(x, 1.5f));  // gelu saves its input
    h = ag::gelu(h);
    const Variable loss = ag::sum(h);
    h = Variable();
    EXPECT_GT(live_bytes(), base + 2 * 128 * 128 * 2 - 1) << "the saved inputs are alive";
    ag::backward(loss);
    after_backward = live_bytes();
    // Only the leaf's float32 gradient (and the loss's one-element tensors) remain.
    EXPECT_LE(after_backward, base + 128 * 128 * 4 + 4096);
    EXPECT_THROW(ag::backward(loss), Error);
  }
  EXPECT_LE(live_bytes(), after_backward);
}

}  // namespace
}  // namespace mantissa::testing

namespace mantissa::testing {
namespace {

TEST(LeafReadyHook, FiresOnceEachLeafsGradientIsFinal) {
  // w is used twice (as a tied weight is): the hook must fire once, after both gradients.
  const Variable x(random_tensor({4, 6}, 7), true);
  const Variable w(random_tensor({6, 6}, 8), true);
  const Variable b(random_tensor({6}, 9), true);
  const Variable unused(random_tensor({3}, 10), true);
  const Variable h = ag::linear(ag::relu(ag::linear(x, w, b)), w, Variable());
  std::vector<const void*> order;
  std::vector<std::vector<float>> seen;
  ag::backward(ag::sum(h), 1.0f, [&](const void* id, Tensor& grad) {
    order.push_back(id);
    seen.push_back(grad.to_vector());
  });
  ASSERT_EQ(order.size(), 3u);  // x, w, b; not `unused`
  std::set<const void*> ids(order.begin(), order.end());
  EXPECT_EQ(ids, (std::set<const void*>{x.id(), w.id(), b.id()}));
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Variable& v = order[i] == x.id() ? x : order[i] == w.id() ? w : b;
    EXPECT_EQ(seen[i], v.grad().to_vector()) << "the gradient handed over was not final";
  }
}

}  // namespace
}  // namespace mantissa::testing

namespace mantissa::testing {
namespace {

TEST(Storage, Bfloat16LeavesGetBfloat16GradientsSummedInFloat32) {
  // A bfloat16 weight used twice: its gradient is bfloat16, the two contributions summed in
  // float32 and rounded once.
  precision::Autocast cast({numerics::Format::bfloat16, 1});
  const Variable w(random_tensor({8, 8}, 11).to(numerics::Format::bfloat16), true);
  const Variable x(random_tensor({4, 8}, 12), false);
  const Variable y = ag::add(ag::linear(x, w, Variable()), ag::linear(x, w, Variable()));
  ag::backward(ag::sum(y));
  EXPECT_EQ(w.grad().format(), numerics::Format::bfloat16);
  // Each contribution: dW = G^T X with G all ones: column sums of x (rounded to bfloat16, the
  // policy's H), in every row.
  auto xv = x.value().to_vector();
  numerics::round_to_format(xv.data(), xv.size(), numerics::Format::bfloat16);
  for (int j = 0; j < 8; ++j) {
    float col = 0;
    for (int r = 0; r < 4; ++r) col += xv[r * 8 + j];
    // Both contributions are float32 sums; their float32 sum is rounded once to bfloat16.
    float want = col + col;
    numerics::round_to_format(&want, 1, numerics::Format::bfloat16);
    EXPECT_EQ(w.grad().to_vector()[j], want) << j;
  }
}

}  // namespace
}  // namespace mantissa::testing
