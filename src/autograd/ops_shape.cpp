// reshape, transpose, concat, split, embedding. Layout ops move elements in their stored
// format (no conversion when formats agree).
#include <cstring>

#include "mantissa/autograd/ops.hpp"
#include "op_support.hpp"

namespace mantissa::autograd {
namespace {
using namespace detail;

struct ReshapeNode : Node {
  Shape in_shape;
  const char* name() const override { return "reshape"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override { return {g.reshape(in_shape)}; }
};

struct TransposeNode : Node {
  int a, b;
  const char* name() const override { return "transpose"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override { return {g.transpose(a, b).contiguous()}; }
};

// Copies `count` blocks of `len` elements: block i from element i * src_stride of src to element
// i * dst_stride of dst (both contiguous), converting to dst's format.
void copy_blocks(const Tensor& src, std::int64_t src_at, std::int64_t src_stride, Tensor& dst,
                 std::int64_t dst_at, std::int64_t dst_stride, std::int64_t count,
                 std::int64_t len) {
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const int sb = src.element_bytes(), db = dst.element_bytes();
  for (std::int64_t i = 0; i < count; ++i) {
    numerics::convert_array(s + (src_at + i * src_stride) * sb, src.format(),
                            static_cast<std::size_t>(len), d + (dst_at + i * dst_stride) * db,
                            dst.format());
  }
}

struct ConcatNode : Node {
  std::vector<Shape> shapes;
  int dim;
  const char* name() const override { return "concat"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor gc = g.contiguous();
    const Shape& gs = gc.shape();
    std::int64_t outer = 1, inner = 1;
    for (int i = 0; i < dim; ++i) outer *= gs[i];
    for (int i = dim + 1; i < gs.size(); ++i) inner *= gs[i];
    std::vector<Tensor> out;
    std::int64_t at = 0;
    for (const Shape& s : shapes) {
      Tensor part = Tensor::empty(s, gc.format());
      copy_blocks(gc, at * inner, gs[dim] * inner, part, 0, s[dim] * inner, outer, s[dim] * inner);
      at += s[dim];
      out.push_back(part);
    }
    return out;
  }
};

struct SliceNode : Node {
  Shape in_shape;
  int dim;
  std::int64_t start;
  const char* name() const override { return "slice"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = Tensor::zeros(in_shape);
    dx.slice(dim, start, start + g.shape()[dim]).copy_from(g);
    return {dx};
  }
};

struct EmbeddingNode : Node {
  std::vector<std::int32_t> ids;
  std::int64_t vocab, width;
  const char* name() const override { return "embedding"; }
  kernels::OpClass op_class() const override { return kernels::OpClass::layout; }
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor d = Tensor::zeros(Shape{vocab, width});
    float* dp = d.f32();
    const Decoded gd(g, 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      float* row = dp + static_cast<std::int64_t>(ids[i]) * width;
      const float* src = gd.range(static_cast<std::int64_t>(i) * width, width);
      for (std::int64_t c = 0; c < width; ++c) row[c] += src[c];
    }
    return {d};
  }
};

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  if (shape.numel() != x.value().numel()) {
    shape_error("reshape", x.shape().to_string() + " to " + shape.to_string() +
                               " changes the number of elements");
  }
  return make_result(x.value().reshape(shape), {x}, [&] {
    auto node = std::make_shared<ReshapeNode>();
    node->in_shape = x.shape();
    return node;
  });
}

Variable transpose(const Variable& x, int a, int b) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  return make_result(x.value().transpose(a, b).contiguous(), {x}, [&] {
    auto node = std::make_shared<TransposeNode>();
    node->a = a;
    node->b = b;
    return node;
  });
}

Variable concat(const std::vector<Variable>& parts, int dim) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  if (parts.empty()) shape_error("concat", "no tensors to join");
  const Shape& first = parts[0].shape();
  const int d = tensor::normalize_dim(dim, first.size(), "concat");
  Shape out = first;
  out[d] = 0;
  for (const Variable& p : parts) {
    Shape s = p.shape();
    if (s.size() != first.size()) shape_error("concat", "tensors differ in rank");
    for (int i = 0; i < s.size(); ++i) {
      if (i != d && s[i] != first[i]) {
        shape_error("concat", s.to_string() + " and " + first.to_string() +
                                  " differ outside dimension " + std::to_string(d));
      }
    }
    out[d] += s[d];
  }
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= out[i];
  for (int i = d + 1; i < out.size(); ++i) inner *= out[i];
  Tensor y = Tensor::empty(out, result_format(precision::current_policy()));
  std::int64_t at = 0;
  std::vector<Shape> shapes;
  for (const Variable& p : parts) {
    const Tensor pc = p.value().contiguous();
    const std::int64_t len = p.shape()[d] * inner;
    copy_blocks(pc, 0, len, y, at * inner, out[d] * inner, outer, len);
    at += p.shape()[d];
    shapes.push_back(p.shape());
  }
  return make_result(std::move(y), parts, [&] {
    auto node = std::make_shared<ConcatNode>();
    node->shapes = shapes;
    node->dim = d;
    return node;
  });
}

std::vector<Variable> split(const Variable& x, const std::vector<std::int64_t>& sizes, int dim) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  const int d = tensor::normalize_dim(dim, x.shape().size(), "split");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > x.shape()[d]) {
      shape_error("split", "size " + std::to_string(sizes[i]) + " at index " + std::to_string(i) +
                               " (expected 0.." + std::to_string(x.shape()[d]) +
                               ", the length of dimension " + std::to_string(d) + ")");
    }
    total += sizes[i];  // (each at most the length: no overflow before the test below)
    if (total > x.shape()[d]) break;
  }
  if (total != x.shape()[d]) {
    shape_error(
        "split",
        std::string(total > x.shape()[d] ? "sizes add up to more than"
                                         : "sizes add up to " + std::to_string(total) + ", not") +
            " the " + std::to_string(x.shape()[d]) + " of dimension " + std::to_string(d));
  }
  // Each part is a contiguous copy of a slice (in x's format); its gradient lands in that slice
  // of zeros.
  std::vector<Variable> parts;
  std::int64_t at = 0;
  for (std::int64_t s : sizes) {
    const std::int64_t start = at;
    parts.push_back(make_result(x.value().slice(d, at, at + s).contiguous(), {x}, [&] {
      auto node = std::make_shared<SliceNode>();
      node->in_shape = x.shape();
      node->dim = d;
      node->start = start;
      return node;
    }));
    at += s;
  }
  return parts;
}

Variable embedding(const Variable& table, const std::vector<std::int32_t>& ids,
                   const Shape& ids_shape) {
  kernels::ProfileScope scope(kernels::OpClass::layout);
  const Shape& ts = table.shape();
  if (ts.size() != 2 || ids_shape.numel() != static_cast<std::int64_t>(ids.size())) {
    shape_error("embedding", "table " + ts.to_string() + " with " + std::to_string(ids.size()) +
                                 " ids of shape " + ids_shape.to_string());
  }
  const std::int64_t vocab = ts[0], width = ts[1];
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      throw Error("embedding: id " + std::to_string(id) + " is outside [0, " +
                  std::to_string(vocab) + ")");
    }
  }
  const Tensor t = table.value().contiguous();
  Shape out = ids_shape;
  out.push_back(width);
  Tensor y = Tensor::empty(out, result_format(precision::current_policy()));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    copy_blocks(t, static_cast<std::int64_t>(ids[i]) * width, 0, y,
                static_cast<std::int64_t>(i) * width, 0, 1, width);
  }
  return make_result(std::move(y), {table}, [&] {
    auto node = std::make_shared<EmbeddingNode>();
    node->ids = ids;
    node->vocab = vocab;
    node->width = width;
    return node;
  });
}

}  // namespace mantissa::autograd
