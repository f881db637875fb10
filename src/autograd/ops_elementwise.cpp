// add, sub, mul, scale, sum, mean.
#include "mantissa/autograd/ops.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/pointwise.hpp"
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

// Calls fn(offset, count, column) for the pieces of the element range [begin, end) that stay
// within one repeat of `inner` elements (column: where the piece starts in the repeat).
template <class Fn>
void by_repeat(std::int64_t begin, std::int64_t end, std::int64_t inner, Fn&& fn) {
  for (std::int64_t i = begin; i < end;) {
    const std::int64_t col = i % inner;
    const std::int64_t len = std::min(end - i, inner - col);
    fn(i, len, col);
    i += len;
  }
}

// Sums g (n elements) into `inner` buckets in element order: the gradient of a broadcast
// operand, scaled elementwise by `by` (b's partner, or nothing).
Tensor reduce_to(const Tensor& g, const Tensor& by, std::int64_t inner, const Shape& shape) {
  Tensor out = Tensor::zeros(shape);
  float* o = out.f32();
  const Decoded gd(g, 0);
  const Decoded bd = by.defined() ? Decoded(by, 1) : Decoded();
  const std::int64_t n = g.numel();
  for (std::int64_t t0 = 0; t0 < n; t0 += kTileElements) {
    const std::int64_t len = std::min(kTileElements, n - t0);
    const float* gp = gd.range(t0, len);
    const float* bp = by.defined() ? bd.range(t0, len) : nullptr;
    for (std::int64_t i = 0; i < len; ++i) {
      o[(t0 + i) % inner] += bp != nullptr ? gp[i] * bp[i] : gp[i];
    }
  }
  return out;
}

enum class Kind { add, sub, mul };

struct BinaryNode : Node {
  Kind kind;
  const char* op;  // add, sub or mul: what profiles, precision statistics and overflow
                   // attribution name
  std::int64_t inner;
  Shape b_shape;
  Tensor a, b;  // kept for mul only
  const char* name() const override { return op; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const std::int64_t n = g.numel();
    const bool full = inner == n;
    if (kind == Kind::add) {
      return {g, full ? g.reshape(b_shape) : reduce_to(g, Tensor(), inner, b_shape)};
    }
    if (kind == Kind::sub) {
      const Decoded gd(g, 0);
      Tensor gb = full ? produce(g.shape(), grad_format(1), 1,
                                 [&](std::int64_t r0, std::int64_t r1, float* out) {
                                   const float* gp = gd.range(r0, r1 - r0);
                                   for (std::int64_t i = 0; i < r1 - r0; ++i) out[i] = -gp[i];
                                 })
                       : reduce_to(g, Tensor(), inner, b_shape);
      if (!full) {
        float* p = gb.f32();
        for (std::int64_t i = 0; i < gb.numel(); ++i) p[i] = -p[i];
      }
      return {g, gb.reshape(b_shape)};
    }
    // mul: ga = g * b (b repeating), gb = g * a (summed over the repeats when broadcast).
    const Decoded gd(g, 0), bd(b, 1), ad(a, 2);
    Tensor ga =
        produce(g.shape(), grad_format(0), 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
          const float* gp = gd.range(r0, r1 - r0);
          by_repeat(r0, r1, inner, [&](std::int64_t i, std::int64_t len, std::int64_t col) {
            const float* bp = bd.range(col, len);
            for (std::int64_t j = 0; j < len; ++j) out[i - r0 + j] = gp[i - r0 + j] * bp[j];
          });
        });
    Tensor gb = full ? produce(g.shape(), grad_format(1), 1,
                               [&](std::int64_t r0, std::int64_t r1, float* out) {
                                 const float* gp = gd.range(r0, r1 - r0);
                                 const float* ap = ad.range(r0, r1 - r0);
                                 for (std::int64_t i = 0; i < r1 - r0; ++i) out[i] = gp[i] * ap[i];
                               })
                     : reduce_to(g, a, inner, b_shape);
    return {ga, gb.reshape(b_shape)};
  }
};

// a + b of two bfloat16 tensors of one shape, rounded to bfloat16 without float32 copies (the
// same bits as decoding, adding and rounding); an undefined tensor where they are not that.
Tensor add_bf16(const Tensor& a, const Tensor& b, Format result) {
  const auto bf16 = [](const Tensor& t) {
    return t.format() == Format::bfloat16 && t.is_contiguous();
  };
  if (result != Format::bfloat16 || !bf16(a) || !bf16(b) || a.shape() != b.shape()) return {};
  Tensor y = Tensor::empty(a.shape(), Format::bfloat16);
  kernels::add_bf16(static_cast<const std::uint16_t*>(a.raw_data()),
                    static_cast<const std::uint16_t*>(b.raw_data()),
                    static_cast<std::uint16_t*>(y.raw_data()), a.numel());
  return y;
}

Variable binary(const char* op, Kind kind, const Variable& a, const Variable& b) {
  kernels::ProfileScope scope(kernels::OpClass::pointwise);
  const std::int64_t inner = broadcast_inner(op, a.shape(), b.shape());
  const Format format = result_format(precision::current_policy());
  Tensor y = kind == Kind::add ? add_bf16(a.value(), b.value(), format) : Tensor();
  if (!y.defined()) {
    const Decoded ad(a.value(), 0), bd(b.value(), 1);
    y = produce(a.shape(), format, 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
      const float* ap = ad.range(r0, r1 - r0);
      by_repeat(r0, r1, inner, [&](std::int64_t i, std::int64_t len, std::int64_t col) {
        const float* x = ap + (i - r0);
        const float* bp = bd.range(col, len);
        float* yr = out + (i - r0);
        switch (kind) {
          case Kind::add:
            for (std::int64_t j = 0; j < len; ++j) yr[j] = x[j] + bp[j];
            break;
          case Kind::sub:
            for (std::int64_t j = 0; j < len; ++j) yr[j] = x[j] - bp[j];
            break;
          case Kind::mul:
            for (std::int64_t j = 0; j < len; ++j) yr[j] = x[j] * bp[j];
            break;
        }
      });
    });
  }
  return make_result(std::move(y), {a, b}, [&] {
    auto node = std::make_shared<BinaryNode>();
    node->kind = kind;
    node->op = op;
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
    const Decoded gd(g, 0);
    return {
        produce(g.shape(), grad_format(0), 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
          const float* gp = gd.range(r0, r1 - r0);
          for (std::int64_t i = 0; i < r1 - r0; ++i) out[i] = gp[i] * s;
        })};
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
  const Decoded ad(a.value(), 0);
  const std::int64_t n = a.value().numel();
  double acc = 0;
  for (std::int64_t t0 = 0; t0 < n; t0 += kTileElements) {
    const std::int64_t len = std::min(kTileElements, n - t0);
    const float* p = ad.range(t0, len);
    for (std::int64_t i = 0; i < len; ++i) acc += p[i];
  }
  const float factor = average ? 1.0f / static_cast<float>(n) : 1.0f;
  // The result of a reduction stays float32 (docs/design.md section 3).
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
  const Decoded ad(a.value(), 0);
  Tensor y = produce(a.shape(), result_format(precision::current_policy()), 1,
                     [&](std::int64_t r0, std::int64_t r1, float* out) {
                       const float* x = ad.range(r0, r1 - r0);
                       for (std::int64_t i = 0; i < r1 - r0; ++i) out[i] = x[i] * s;
                     });
  return make_result(std::move(y), {a}, [&] {
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
