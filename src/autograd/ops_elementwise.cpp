// add, sub, mul, scale, sum, mean.
#include "kernels/parallel.hpp"
#include "mantissa/autograd/ops.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

// b's elements repeat every `inner` elements of a (inner == a.numel() when shapes match).
std::int64_t broadcast_inner(const char* op, const Shape& a, const Shape& b) {
  if (b.numel() == 1) return 1;
  if (b.size() > a.size()) shape_error(op, "shapes " + a.to_string() + " and " + b.to_string());
  for (int i = 0; i < b.size(); ++i) {
    if (b[b.size() - 1 - i] != a[a.size() - 1 - i]) {
      shape_error(op, "shape " + b.to_string() + " does not broadcast to " + a.to_string() +
                          " (it must equal a suffix of it, or have one element)");
    }
  }
  return b.numel();
}

// Sums g (n elements) into `inner` buckets: the gradient of a broadcast operand.
Tensor reduce_to(const Tensor& g, std::int64_t inner, const Shape& shape) {
  Tensor out = Tensor::zeros(shape);
  const float* gp = g.f32();
  float* o = out.f32();
  const std::int64_t n = g.numel();
  for (std::int64_t i = 0; i < n; ++i) o[i % inner] += gp[i];
  return out;
}

enum class Kind { add, sub, mul };

struct BinaryNode : Node {
  Kind kind;
  std::int64_t inner;
  Shape b_shape;
  Tensor a, b;  // kept for mul only
  const char* name() const override { return "binary"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const std::int64_t n = g.numel();
    Tensor ga = g, gb;
    if (kind == Kind::mul) {
      const Tensor a32 = f32(a), b32 = f32(b);
      ga = new_f32(g.shape());
      Tensor gb_full = new_f32(g.shape());
      const float *gp = g.f32(), *ap = a32.f32(), *bp = b32.f32();
      float *gap = ga.f32(), *gbp = gb_full.f32();
      for (std::int64_t i = 0; i < n; ++i) {
        gap[i] = gp[i] * bp[i % inner];
        gbp[i] = gp[i] * ap[i];
      }
      gb = inner == n ? gb_full : reduce_to(gb_full, inner, b_shape);
    } else {
      gb = inner == n ? g.clone() : reduce_to(g, inner, b_shape);
      if (kind == Kind::sub) {
        float* p = gb.f32();
        for (std::int64_t i = 0; i < gb.numel(); ++i) p[i] = -p[i];
      }
    }
    return {ga, gb.reshape(b_shape)};
  }
};

Variable binary(const char* op, Kind kind, const Variable& a, const Variable& b) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const std::int64_t inner = broadcast_inner(op, a.shape(), b.shape());
  const Policy& p = precision::current_policy();
  const Tensor a32 = f32(a.value()), b32 = f32(b.value());
  Tensor y = new_f32(a.shape());
  const float *ap = a32.f32(), *bp = b32.f32();
  float* yp = y.f32();
  // b repeats every `inner` elements: run over whole repeats (rows) so the loops vectorize.
  const std::int64_t rows = inner > 0 ? y.numel() / inner : 0;
  Stored stored = fill_and_store(y, p, rows, inner, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* ar = ap + r * inner;
      float* yr = yp + r * inner;
      switch (kind) {
        case Kind::add:
          for (std::int64_t i = 0; i < inner; ++i) yr[i] = ar[i] + bp[i];
          break;
        case Kind::sub:
          for (std::int64_t i = 0; i < inner; ++i) yr[i] = ar[i] - bp[i];
          break;
        case Kind::mul:
          for (std::int64_t i = 0; i < inner; ++i) yr[i] = ar[i] * bp[i];
          break;
      }
    }
  });
  return make_result(std::move(stored), {a, b}, [&] {
    auto node = std::make_shared<BinaryNode>();
    node->kind = kind;
    node->inner = inner;
    node->b_shape = b.shape();
    if (kind == Kind::mul) {
      node->a = a.value();
      node->b = b.value();
    }
    return node;
  });
}

struct ScaleNode : Node {
  float s;
  const char* name() const override { return "scale"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor out = g.clone();
    float* p = out.f32();
    for (std::int64_t i = 0; i < out.numel(); ++i) p[i] *= s;
    return {out};
  }
};

struct SumNode : Node {
  Shape shape;
  float factor;
  const char* name() const override { return "sum"; }
  std::vector<Tensor> apply(const Tensor& g) override {
    return {Tensor::full(shape, g.item() * factor)};
  }
};

Variable reduce_all(const Variable& a, bool average) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const Tensor a32 = f32(a.value());
  double acc = 0;
  const float* p = a32.f32();
  for (std::int64_t i = 0; i < a32.numel(); ++i) acc += p[i];
  const float factor = average ? 1.0f / static_cast<float>(a32.numel()) : 1.0f;
  // The result of a reduction stays float32 (DESIGN.md section 3).
  return make_result(Tensor::scalar(static_cast<float>(acc * factor)), {a}, [&] {
    auto node = std::make_shared<SumNode>();
    node->shape = a.shape();
    node->factor = factor;
    return node;
  });
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  return binary("add", Kind::add, a, b);
}
Variable sub(const Variable& a, const Variable& b) {
  return binary("sub", Kind::sub, a, b);
}
Variable mul(const Variable& a, const Variable& b) {
  return binary("mul", Kind::mul, a, b);
}

Variable scale(const Variable& a, float s) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  Tensor y = detail::f32(a.value()).clone();
  float* p = y.f32();
  for (std::int64_t i = 0; i < y.numel(); ++i) p[i] *= s;
  return detail::make_result(detail::store(y, precision::current_policy()), {a}, [&] {
    auto node = std::make_shared<ScaleNode>();
    node->s = s;
    return node;
  });
}

Variable sum(const Variable& a) {
  return reduce_all(a, false);
}
Variable mean(const Variable& a) {
  return reduce_all(a, true);
}

}  // namespace mantissa::autograd
