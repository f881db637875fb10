#pragma once
// Internal helpers shared by the op implementations.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/parallel.hpp"
#include "mantissa/autograd/variable.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::autograd::detail {

using precision::Policy;

// The values as a contiguous float32 tensor (no copy when already one).
inline Tensor f32(const Tensor& t) {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  return t.to(Format::float32);
}

// A fresh float32 result buffer.
inline Tensor new_f32(const Shape& shape) {
  return Tensor::empty(shape, Format::float32);
}

// Rounds float32 values to `f` in place (nearest-even; no-op for float32), on all threads.
void round_in_place(float* x, std::int64_t n, Format f);

// An op's float32 result holding values of `held` (make_result marks the Variable, so the
// next op's value_rounded_to(held) is free).
struct Stored {
  Tensor value;
  Format held = Format::float32;
};

// Activations live in H between ops (DESIGN.md section 3): the result is rounded to the
// policy's H in place. The container stays float32: every kernel on this CPU reads float32,
// so a packed 16-bit copy would only add an encode here and a decode at each consumer.
inline Stored store(Tensor y32, const Policy& p) {
  const Format f = precision::activation_format(p);
  round_in_place(y32.f32(), y32.numel(), f);
  return {std::move(y32), f};
}

// Fused form of filling a result and store(): fill(r0, r1) writes rows [r0, r1) of y32
// (rows of row_len elements); each tile of rows is rounded to H right after it is written,
// while it is still in cache. Tiles are spread over the threads. One pass over the result
// instead of two.
template <class Fill>
Stored fill_and_store(Tensor y32, const Policy& p, std::int64_t rows, std::int64_t row_len,
                      Fill&& fill) {
  const Format f = precision::activation_format(p);
  float* y = y32.f32();
  const std::int64_t len = std::max<std::int64_t>(row_len, 1);
  const std::int64_t tile = std::max<std::int64_t>(1, (1 << 14) / len);  // ~64 KiB of rows
  kernels::parallel_chunks(
      rows,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t t0 = r0; t0 < r1; t0 += tile) {
          const std::int64_t t1 = std::min(r1, t0 + tile);
          fill(t0, t1);
          if (f != Format::float32) {
            numerics::round_to_format(y + t0 * row_len,
                                      static_cast<std::size_t>((t1 - t0) * row_len), f);
          }
        }
      },
      std::max<std::int64_t>(1, kernels::kParallelMinElements / len));
  return {std::move(y32), f};
}

// The GEMM precision a matmul-class op uses under `p`.
inline kernels::GemmPrecision gemm_precision(const Policy& p) {
  return {p.half, precision::matmul_passes(p.half, p.opt_level), kernels::GemmAlgorithm::automatic};
}

bool any_requires_grad(const std::vector<Variable>& inputs);

// Wraps `value` as the result of an op: when gradients are on and an input needs one, the
// node made by `make` records the inputs and the policy.
template <class MakeNode>
Variable make_result(Tensor value, std::vector<Variable> inputs, MakeNode&& make) {
  Variable out(std::move(value));
  if (grad_enabled() && any_requires_grad(inputs)) {
    std::shared_ptr<Node> node = make();
    node->inputs = std::move(inputs);
    node->policy = precision::current_policy();
    out.set_grad_fn(std::move(node));
  }
  return out;
}

template <class MakeNode>
Variable make_result(Stored value, std::vector<Variable> inputs, MakeNode&& make) {
  Variable out = make_result(std::move(value.value), std::move(inputs), make);
  if (value.held != Format::float32) out.mark_rounded_to(value.held);
  return out;
}

[[noreturn]] void shape_error(const char* op, const std::string& what);

}  // namespace mantissa::autograd::detail
