// layer_norm, softmax, log_softmax, cross_entropy: fp32 reductions over the last dimension,
// a tile of rows at a time (inputs decoded per tile, results encoded per tile).
#include <cmath>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/rows.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "op_support.hpp"
#include "support/number_text.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

std::int64_t rows_of(const Tensor& t, std::int64_t cols) {
  return cols > 0 ? t.numel() / cols : 0;
}

// A per-thread buffer for outputs a backward recomputes.
float* recompute_buffer(std::int64_t n) {
  thread_local kernels::ScratchBuffer buffer;
  return buffer.as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

struct LayerNormNode : Node {
  Tensor x, gamma, mean, rstd;  // x as stored; gamma, mean, rstd float32
  std::int64_t cols;
  const char* name() const override { return "layer_norm"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::norm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Decoded xd(x, 0), gd(g, 1), gammad(gamma, 2);
    const float* gm = gammad.range(0, cols);
    Tensor dx =
        produce(x.shape(), grad_format(0), cols, [&](std::int64_t r0, std::int64_t r1, float* out) {
          kernels::layer_norm_backward(xd.range(r0 * cols, (r1 - r0) * cols), gm, mean.f32() + r0,
                                       rstd.f32() + r0, gd.range(r0 * cols, (r1 - r0) * cols), out,
                                       r1 - r0, cols);
        });
    // dgamma and dbeta sum over the rows in order: the columns are split over the threads.
    Tensor dgamma = Tensor::zeros(Shape{cols}), dbeta = Tensor::zeros(Shape{cols});
    const std::int64_t rows = rows_of(x, cols);
    float* dgp = dgamma.f32();
    float* dbp = dbeta.f32();
    // 16-bit rows (bfloat16, float16, cbfloat16) are read as they are stored (widened in the
    // loop: the same floats).
    const Format stored = xd.tensor().format();
    const bool bits16 =
        stored == gd.tensor().format() &&
        (stored == Format::bfloat16 || stored == Format::float16 || stored == Format::cbfloat16);
    const auto* xb = static_cast<const std::uint16_t*>(xd.tensor().raw_data());
    const auto* gb = static_cast<const std::uint16_t*>(gd.tensor().raw_data());
    kernels::parallel_chunks(
        cols,
        [&](std::int64_t c0, std::int64_t c1) {
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t at = r * cols + c0;
            if (bits16) {
              kernels::layer_norm_param_gradients_16(xb + at, gb + at, stored, mean.f32()[r],
                                                     rstd.f32()[r], dgp + c0, dbp + c0, c1 - c0);
              continue;
            }
            kernels::layer_norm_param_gradients(xd.range(at, c1 - c0), gd.range(at, c1 - c0),
                                                mean.f32()[r], rstd.f32()[r], dgp + c0, dbp + c0,
                                                c1 - c0);
          }
        },
        rows * cols >= kernels::kParallelMinElements ? 32 : cols + 1);
    return {dx, dgamma, dbeta};
  }
};

struct SoftmaxNode : Node {
  Tensor x;  // the input, as stored: backward recomputes the float32 output from it
  bool log;
  std::int64_t cols;
  const char* name() const override { return log ? "log_softmax" : "softmax"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::softmax_loss; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Decoded xd(x, 0), gd(g, 1);
    return {
        produce(x.shape(), grad_format(0), cols, [&](std::int64_t r0, std::int64_t r1, float* out) {
          const std::int64_t n = r1 - r0;
          // The float32 output, recomputed exactly as the forward made it.
          float* y = recompute_buffer(n * cols);
          const float* xp = xd.range(r0 * cols, n * cols);
          const float* gp = gd.range(r0 * cols, n * cols);
          if (log) {
            kernels::log_softmax_forward(xp, y, n, cols);
            kernels::log_softmax_backward(y, gp, out, n, cols);
          } else {
            kernels::softmax_forward(xp, y, n, cols);
            kernels::softmax_backward(y, gp, out, n, cols);
          }
        })};
  }
};

struct CrossEntropyNode : Node {
  Tensor logits, lse;  // logits as stored; lse float32
  std::vector<std::int32_t> targets;
  std::int32_t ignore_index;
  std::int64_t cols, counted;
  const char* name() const override { return "cross_entropy"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::softmax_loss; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Decoded ld(logits, 0);
    const float s = counted > 0 ? g.item() / static_cast<float>(counted) : 0.0f;
    return {produce(
        logits.shape(), grad_format(0), cols, [&](std::int64_t r0, std::int64_t r1, float* out) {
          kernels::cross_entropy_backward(ld.range(r0 * cols, (r1 - r0) * cols), lse.f32() + r0,
                                          targets.data() + r0, r1 - r0, cols, ignore_index, s, out);
        })};
  }
};

Variable softmax_impl(const Variable& x, bool log) {
  kernels::ProfileScope scope(kernels::OpClass::softmax_loss);
  if (x.shape().empty()) shape_error(log ? "log_softmax" : "softmax", "a scalar has no last dim");
  const std::int64_t cols = x.shape().back();
  const Decoded xd(x.value(), 0);
  Tensor y = produce(x.shape(), result_format(precision::current_policy()), cols,
                     [&](std::int64_t r0, std::int64_t r1, float* out) {
                       const float* xp = xd.range(r0 * cols, (r1 - r0) * cols);
                       if (log) {
                         kernels::log_softmax_forward(xp, out, r1 - r0, cols);
                       } else {
                         kernels::softmax_forward(xp, out, r1 - r0, cols);
                       }
                     });
  return make_result(std::move(y), {x}, [&] {
    auto node = std::make_shared<SoftmaxNode>();
    node->x = x.value();
    node->log = log;
    node->cols = cols;
    return node;
  });
}

}  // namespace

Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta, float eps) {
  kernels::ProfileScope scope(kernels::OpClass::norm);
  if (!(eps >= 0.0f) || std::isinf(eps)) {
    shape_error("layer_norm",
                "eps " + support::value_text(eps) + " (expected a finite value >= 0)");
  }
  if (x.shape().empty())
    shape_error("layer_norm", "the input is a scalar (it has no last dimension)");
  const std::int64_t cols = x.shape().back();
  if (!(gamma.shape() == Shape{cols}) || !(beta.shape() == Shape{cols})) {
    shape_error("layer_norm", "input " + x.shape().to_string() + " with gamma " +
                                  gamma.shape().to_string() + " and beta " +
                                  beta.shape().to_string() + " (expected [" + std::to_string(cols) +
                                  "])");
  }
  const std::int64_t rows = rows_of(x.value(), cols);
  const Decoded xd(x.value(), 0);
  const Tensor g32 = to_format(gamma.value(), Format::float32, false);
  const Tensor b32 = to_format(beta.value(), Format::float32, false);
  Tensor mu = Tensor::empty(Shape{rows}), rs = Tensor::empty(Shape{rows});
  Tensor y = produce(x.shape(), result_format(precision::current_policy()), cols,
                     [&](std::int64_t r0, std::int64_t r1, float* out) {
                       kernels::layer_norm_forward(xd.range(r0 * cols, (r1 - r0) * cols), g32.f32(),
                                                   b32.f32(), out, mu.f32() + r0, rs.f32() + r0,
                                                   r1 - r0, cols, eps);
                     });
  return make_result(std::move(y), {x, gamma, beta}, [&] {
    auto node = std::make_shared<LayerNormNode>();
    node->x = x.value();
    node->gamma = gamma.value();
    node->mean = mu;
    node->rstd = rs;
    node->cols = cols;
    return node;
  });
}

Variable softmax(const Variable& x) {
  return softmax_impl(x, false);
}
Variable log_softmax(const Variable& x) {
  return softmax_impl(x, true);
}

Variable cross_entropy(const Variable& logits, const std::vector<std::int32_t>& targets,
                       std::int32_t ignore_index) {
  kernels::ProfileScope scope(kernels::OpClass::softmax_loss);
  const Shape& s = logits.shape();
  if (s.size() != 2 || s[0] != static_cast<std::int64_t>(targets.size())) {
    shape_error("cross_entropy", "logits " + s.to_string() + " with " +
                                     std::to_string(targets.size()) +
                                     " targets (expected logits [n, classes] and n targets)");
  }
  const std::int64_t rows = s[0], cols = s[1];
  std::int64_t counted = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t t = targets[static_cast<std::size_t>(r)];
    if (t == ignore_index) continue;
    if (t < 0 || t >= cols) {
      throw Error("cross_entropy: target " + std::to_string(t) + " at row " + std::to_string(r) +
                  " is outside [0, " + std::to_string(cols) + ")");
    }
    ++counted;
  }
  const Decoded ld(logits.value(), 0);
  Tensor per_row = Tensor::empty(Shape{rows}), lse = Tensor::empty(Shape{rows});
  kernels::parallel_chunks(
      rows,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t t0 = r0; t0 < r1; t0 += std::max<std::int64_t>(1, kTileElements / cols)) {
          const std::int64_t t1 =
              std::min(r1, t0 + std::max<std::int64_t>(1, kTileElements / cols));
          kernels::cross_entropy_forward(ld.range(t0 * cols, (t1 - t0) * cols), targets.data() + t0,
                                         t1 - t0, cols, ignore_index, per_row.f32() + t0,
                                         lse.f32() + t0);
        }
      },
      std::max<std::int64_t>(1, kernels::kParallelMinElements / std::max<std::int64_t>(cols, 1)));
  double total = 0;
  for (std::int64_t r = 0; r < rows; ++r) total += per_row.f32()[r];
  const float loss = counted > 0 ? static_cast<float>(total / static_cast<double>(counted)) : 0.0f;
  return make_result(Tensor::scalar(loss), {logits}, [&] {
    auto node = std::make_shared<CrossEntropyNode>();
    node->logits = logits.value();
    node->lse = lse;
    node->targets = targets;
    node->ignore_index = ignore_index;
    node->cols = cols;
    node->counted = counted;
    return node;
  });
}

}  // namespace mantissa::autograd
