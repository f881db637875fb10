// matmul and linear: the matmul class (inputs in H, fp32 accumulation).
#include "kernels/parallel.hpp"
#include "mantissa/autograd/ops.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;
using kernels::GemmShape;

struct MatmulNode : Node {
  Tensor a, b;  // float32 holding H values
  std::int64_t batch, m, k, n;
  bool batched_b;
  Shape a_shape, b_shape;
  const char* name() const override { return "matmul"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    Tensor da = new_f32(a_shape), db = Tensor::zeros(b_shape);
    for (std::int64_t i = 0; i < batch; ++i) {
      const float* gi = g.f32() + i * m * n;
      const float* bi = b.f32() + (batched_b ? i * k * n : 0);
      // dA = G B^T ; dB (+)= A^T G
      kernels::gemm(GemmShape::dense(m, k, n, false, true), gi, bi, da.f32() + i * m * k, false,
                    gp);
      kernels::gemm(GemmShape::dense(k, n, m, true, false), a.f32() + i * m * k, gi,
                    db.f32() + (batched_b ? i * k * n : 0), true, gp);
    }
    return {da, db};
  }
};

struct LinearNode : Node {
  Tensor x, w;  // float32 holding H values: x [rows, in], w [out, in]
  std::int64_t rows, in, out;
  Shape x_shape;
  bool has_bias;
  const char* name() const override { return "linear"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::gemm; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const kernels::GemmPrecision gp = gemm_precision(policy);
    Tensor dx = new_f32(x_shape);
    Tensor dw = new_f32(Shape{out, in});
    // dx = G W ; dW = G^T X ; db = column sums of G (fp32)
    kernels::gemm(GemmShape::dense(rows, in, out), g.f32(), w.f32(), dx.f32(), false, gp);
    kernels::gemm(GemmShape::dense(out, in, rows, true, false), g.f32(), x.f32(), dw.f32(), false,
                  gp);
    Tensor db;
    if (has_bias) {
      db = Tensor::zeros(Shape{out});
      float* d = db.f32();
      const float* gp32 = g.f32();
      // Column sums; each thread owns a range of columns.
      kernels::parallel_chunks(
          out,
          [&](std::int64_t c0, std::int64_t c1) {
            for (std::int64_t r = 0; r < rows; ++r) {
              for (std::int64_t c = c0; c < c1; ++c) d[c] += gp32[r * out + c];
            }
          },
          std::max<std::int64_t>(16,
                                 kernels::kParallelMinElements / std::max<std::int64_t>(rows, 1)));
    }
    return {dx, dw, db};
  }
};

}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  if (as.size() < 2 || bs.size() < 2) {
    shape_error("matmul", "operands need at least 2 dimensions (got " + as.to_string() + " and " +
                              bs.to_string() + ")");
  }
  const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const bool batched_b = bs.size() > 2;
  if (bs[bs.size() - 2] != k ||
      (batched_b && (bs.size() != as.size() ||
                     Shape(as.begin(), as.end() - 2) != Shape(bs.begin(), bs.end() - 2)))) {
    shape_error("matmul",
                "shapes " + as.to_string() + " and " + bs.to_string() + " do not multiply");
  }
  const std::int64_t batch = as.numel() / (m * k);
  const Policy& p = precision::current_policy();
  const Tensor a32 = a.value_rounded_to(p.half), b32 = b.value_rounded_to(p.half);
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(n);
  Tensor y = new_f32(ys);
  const kernels::GemmPrecision gp = gemm_precision(p);
  for (std::int64_t i = 0; i < batch; ++i) {
    kernels::gemm(GemmShape::dense(m, n, k), a32.f32() + i * m * k,
                  b32.f32() + (batched_b ? i * k * n : 0), y.f32() + i * m * n, false, gp);
  }
  return make_result(store(y, p), {a, b}, [&] {
    auto node = std::make_shared<MatmulNode>();
    node->a = a32;
    node->b = b32;
    node->batch = batch;
    node->m = m;
    node->k = k;
    node->n = n;
    node->batched_b = batched_b;
    node->a_shape = as;
    node->b_shape = bs;
    return node;
  });
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  kernels::ProfileScope scope(kernels::OpClass::gemm);
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    shape_error("linear", "input " + xs.to_string() + " and weight " + ws.to_string() +
                              " (expected weight [out, in] with in = the input's last dim)");
  }
  const std::int64_t in = ws[1], out = ws[0], rows = xs.numel() / in;
  if (bias.defined() && !(bias.shape() == Shape{out})) {
    shape_error("linear",
                "bias " + bias.shape().to_string() + " (expected [" + std::to_string(out) + "])");
  }
  const Policy& p = precision::current_policy();
  const Tensor x32 = x.value_rounded_to(p.half);        // free when x came from an op
  const Tensor& w32 = weight.value_rounded_to(p.half);  // the weight's H copy, once per step
  Shape ys(xs.begin(), xs.end() - 1);
  ys.push_back(out);
  Tensor y = new_f32(ys);
  kernels::gemm(GemmShape::dense(rows, out, in, false, true), x32.f32(), w32.f32(), y.f32(), false,
                gemm_precision(p));
  // The bias add and the rounding to H in one pass over the result.
  const Tensor b32 = bias.defined() ? f32(bias.value()) : Tensor();
  float* yp = y.f32();
  const float* bp = bias.defined() ? b32.f32() : nullptr;
  Stored stored = fill_and_store(y, p, rows, out, [&](std::int64_t r0, std::int64_t r1) {
    if (bp == nullptr) return;
    for (std::int64_t r = r0; r < r1; ++r) {
      for (std::int64_t c = 0; c < out; ++c) yp[r * out + c] += bp[c];
    }
  });
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result(std::move(stored), inputs, [&] {
    auto node = std::make_shared<LinearNode>();
    node->x = x32;
    node->w = w32;
    node->rows = rows;
    node->in = in;
    node->out = out;
    node->x_shape = xs;
    node->has_bias = bias.defined();
    return node;
  });
}

}  // namespace mantissa::autograd
