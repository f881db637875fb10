#pragma once
// Internal helpers shared by the op implementations.
//
// Storage: under a half policy every op stores its result in H's own width (2 bytes for the
// 16-bit formats, 1 for fp8), and reads its inputs in whatever format they are stored. Ops
// never make a float32 copy of a whole input: they read it a tile at a time through Decoded
// (decoded into a per-thread buffer), or hand it to the GEMM, which decodes inside its
// packing; results are made tile by tile by produce() (a per-thread float32 tile encoded into
// the result while in cache). A step's float32 working set is that of one op.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::autograd::detail {

using precision::Policy;

// The format an op stores its result in: H, or float32 when mixed precision is off.
inline Format result_format(const Policy& p) {
  return precision::activation_format(p);
}

// A contiguous copy of t in format f (nearest-even), converted on all threads. Without
// `fresh`, t itself when it is contiguous and already in f.
Tensor to_format(const Tensor& t, Format f, bool fresh);

// into += g elementwise in float32; into is float32, contiguous and not shared, g any format
// with the same number of elements. On all threads.
void add_into(Tensor& into, const Tensor& g);
// into = g's values, the same way (a leaf's first gradient after zero_grad).
void assign_into(Tensor& into, const Tensor& g);

// a + b elementwise as a new contiguous float32 tensor of a's shape (any formats, the same
// number of elements), in one pass on all threads.
Tensor sum_as_float32(const Tensor& a, const Tensor& b);

// Reads a tensor's elements (row-major order of its shape) as float32, a range at a time:
// straight from the tensor when it is float32, else decoded into the calling thread's buffer
// for `slot` (one slot per tensor an op reads at the same time). A pointer stays valid until
// the same thread reads the same slot again.
class Decoded {
 public:
  static constexpr int kSlots = 4;
  Decoded() = default;
  Decoded(const Tensor& t, int slot);
  const float* range(std::int64_t begin, std::int64_t count) const;
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
  const float* f32_ = nullptr;
  int slot_ = 0;
};

// A per-thread float32 buffer of at least n elements (for results made a tile at a time).
float* tile_buffer(std::int64_t n);

// Writes n float32 values into t (contiguous) from element `at` on, encoded to t's format.
void write_values(Tensor& t, std::int64_t at, const float* v, std::int64_t n);

// The GEMM operand for a contiguous tensor, starting `offset` elements in.
inline kernels::Operand operand(const Tensor& t, std::int64_t offset = 0) {
  return {static_cast<const char*>(t.raw_data()) + offset * t.element_bytes(), t.format()};
}

constexpr std::int64_t kTileElements = 1 << 14;  // ~64 KiB of float32

// A new contiguous tensor of `shape` in `format`, made on all threads (or the calling one) a
// tile of rows at a time: fill(r0, r1, out) writes rows [r0, r1) (row_len floats each) as
// float32 to out. For a float32 result out points into the result; else into a per-thread
// tile that is encoded into the result right after, while it is in cache.
template <class Fill>
Tensor produce(const Shape& shape, Format format, std::int64_t row_len, Fill&& fill,
               bool parallel = true) {
  Tensor out = Tensor::empty(shape, format);
  const std::int64_t len = std::max<std::int64_t>(row_len, 1);
  const std::int64_t rows = shape.numel() / len;
  const std::int64_t tile_rows = std::max<std::int64_t>(1, kTileElements / len);
  const auto body = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t t0 = r0; t0 < r1; t0 += tile_rows) {
      const std::int64_t t1 = std::min(r1, t0 + tile_rows);
      if (format == Format::float32) {
        fill(t0, t1, out.f32() + t0 * len);
      } else {
        float* tile = tile_buffer((t1 - t0) * len);
        fill(t0, t1, tile);
        write_values(out, t0 * len, tile, (t1 - t0) * len);
      }
    }
  };
  if (parallel) {
    kernels::parallel_chunks(rows, body,
                             std::max<std::int64_t>(1, kernels::kParallelMinElements / len));
  } else if (rows > 0) {
    body(0, rows);
  }
  return out;
}

// The GEMM precision a matmul-class op uses under `p`.
inline kernels::GemmPrecision gemm_precision(const Policy& p) {
  return {p.half, precision::matmul_passes(p.half, p.opt_level), kernels::GemmAlgorithm::automatic,
          p.matmul_route};
}

bool any_requires_grad(const std::vector<Variable>& inputs);

// Wraps `value` as the result of an op: when gradients are on and an input needs one, the
// node made by `make` records an edge per input and the policy. `make` runs only then, so
// nothing is saved for a backward that cannot happen.
template <class MakeNode>
Variable make_result(Tensor value, const std::vector<Variable>& inputs, MakeNode&& make) {
  Variable out(std::move(value));
  if (grad_enabled() && any_requires_grad(inputs)) {
    std::shared_ptr<Node> node = make();
    node->next.reserve(inputs.size());
    for (const Variable& v : inputs) node->next.push_back(v.edge());
    node->policy = precision::current_policy();
    node->layer = precision::current_layer();
    out.set_grad_fn(std::move(node));
  }
  return out;
}

[[noreturn]] void shape_error(const char* op, const std::string& what);

}  // namespace mantissa::autograd::detail
