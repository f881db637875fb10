// Autograd ops as a GPT-ref training step calls them, on all threads, with their inputs and
// results in the stored format (float32, or bfloat16 under a bfloat16 autocast): GELU forward
// and backward on a feed-forward layer's 2048 x 1536, the residual add on 2048 x 384, and the
// layer's first linear layer. Against bench_rows' and bench_gemm's rows, the difference is
// what the op adds around the kernel (decoding, rounding, allocation). Compare real time
// within one run.
//   build/bench/bench_ops --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_values.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/autograd/variable.hpp"
#include "mantissa/precision/policy.hpp"

namespace {

using mantissa::numerics::Format;
using mantissa::tensor::Shape;
using mantissa::tensor::Tensor;
namespace ag = mantissa::autograd;

constexpr std::int64_t kRows = 2048, kFilter = 1536, kWidth = 384;

Tensor stored(std::int64_t cols, Format f, unsigned seed) {
  return Tensor::from_vector(
      mantissa::bench_inputs::normal_values(static_cast<std::size_t>(kRows * cols), seed),
      Shape{kRows, cols}, f);
}

mantissa::precision::Policy policy(Format f) {
  return f == Format::float32 ? mantissa::precision::Policy() : mantissa::precision::Policy(f);
}

void BM_gelu_forward(benchmark::State& state, Format f) {
  const mantissa::precision::Autocast cast(policy(f));
  const ag::Variable x(stored(kFilter, f, 1), true);
  for (auto _ : state) benchmark::DoNotOptimize(ag::gelu(x).value().raw_data());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kRows * kFilter);
}

void BM_gelu_backward(benchmark::State& state, Format f) {
  const mantissa::precision::Autocast cast(policy(f));
  const ag::Variable x(stored(kFilter, f, 1), true);
  const ag::Variable y = ag::gelu(x);
  const Tensor dy = stored(kFilter, f, 2);
  // As backward() sets it when the op feeding x (a linear layer) receives no other gradient.
  y.grad_fn()->grad_formats = {f};
  for (auto _ : state) benchmark::DoNotOptimize(y.grad_fn()->apply(dy));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kRows * kFilter);
}

void BM_add_forward(benchmark::State& state, Format f) {
  const mantissa::precision::Autocast cast(policy(f));
  const ag::Variable a(stored(kWidth, f, 1), true), b(stored(kWidth, f, 2), true);
  for (auto _ : state) benchmark::DoNotOptimize(ag::add(a, b).value().raw_data());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kRows * kWidth);
}

// The feed-forward layer's first linear layer: x [2048, 384] by weight [1536, 384] plus bias,
// forward and backward (input, weight and bias gradients), on the `automatic` route: against
// bench_gemm's rows of the same products, what the op adds (operand copies, rounding the
// result, the bias and its gradient).
void BM_linear(benchmark::State& state, Format f, bool backward) {
  const mantissa::precision::Autocast cast(policy(f));
  const ag::Variable x(stored(kWidth, f, 1), true);
  const ag::Variable w(Tensor::from_vector(mantissa::bench_inputs::normal_values(
                                               static_cast<std::size_t>(kFilter * kWidth), 3),
                                           Shape{kFilter, kWidth}),
                       true);
  const ag::Variable b(Tensor::zeros(Shape{kFilter}), true);
  const ag::Variable y = ag::linear(x, w, b);
  const Tensor dy = stored(kFilter, f, 2);
  y.grad_fn()->grad_formats = {f, Format::float32, Format::float32};
  for (auto _ : state) {
    if (backward) {
      benchmark::DoNotOptimize(y.grad_fn()->apply(dy));
    } else {
      benchmark::DoNotOptimize(ag::linear(x, w, b).value().raw_data());
    }
  }
  const double flops = 2.0 * kRows * kFilter * kWidth * (backward ? 2 : 1);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(BM_linear, forward_float32, Format::float32, false)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_linear, forward_bfloat16, Format::bfloat16, false)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_linear, backward_float32, Format::float32, true)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_linear, backward_bfloat16, Format::bfloat16, true)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu_forward, float32, Format::float32)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu_forward, bfloat16, Format::bfloat16)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu_backward, float32, Format::float32)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu_backward, bfloat16, Format::bfloat16)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_add_forward, float32, Format::float32)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_add_forward, bfloat16, Format::bfloat16)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_MAIN();
