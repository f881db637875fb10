// Row kernels at GPT-ref's sizes (2048 rows of 384): layer norm forward and backward and
// softmax, on all threads; and GELU forward and backward on a feed-forward layer's 2048 x 1536,
// on the best SIMD path and on AVX2 (`BM_gelu/*_avx2`). CPU time is the calling thread's;
// compare real time within a run.
//   build/bench/bench_rows --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_values.hpp"
#include "mantissa/kernels/pointwise.hpp"
#include "mantissa/kernels/rows.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace {

namespace k = mantissa::kernels;

constexpr std::int64_t kRows = 2048, kCols = 384;

std::vector<float> values(std::size_t n, unsigned seed) {
  return mantissa::bench_inputs::normal_values(n, seed);
}

struct Data {
  std::vector<float> x = values(kRows * kCols, 1), dy = values(kRows * kCols, 2),
                     gamma = values(kCols, 3), beta = values(kCols, 4), y = x, dx = x,
                     mean = std::vector<float>(kRows), rstd = std::vector<float>(kRows);
};

void bytes(benchmark::State& state, int arrays) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * arrays * kRows * kCols *
                          4);
}

void BM_layer_norm_forward(benchmark::State& state) {
  Data d;
  for (auto _ : state) {
    k::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), d.y.data(), d.mean.data(),
                          d.rstd.data(), kRows, kCols, 1e-5f);
    benchmark::ClobberMemory();
  }
  bytes(state, 2);
}

void BM_layer_norm_backward(benchmark::State& state) {
  Data d;
  k::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), d.y.data(), d.mean.data(),
                        d.rstd.data(), kRows, kCols, 1e-5f);
  for (auto _ : state) {
    k::layer_norm_backward(d.x.data(), d.gamma.data(), d.mean.data(), d.rstd.data(), d.dy.data(),
                           d.dx.data(), kRows, kCols);
    benchmark::ClobberMemory();
  }
  bytes(state, 3);
}

void BM_softmax(benchmark::State& state) {
  Data d;
  for (auto _ : state) {
    k::softmax_forward(d.x.data(), d.y.data(), kRows, kCols);
    benchmark::ClobberMemory();
  }
  bytes(state, 2);
}

// GELU on 2048 x 1536 values (path: the SIMD path to run it on).
void BM_gelu(benchmark::State& state, bool backward, mantissa::numerics::SimdPath path) {
  namespace n = mantissa::numerics;
  if (!n::cpu_supports(path)) {
    state.SkipWithError("this CPU lacks the path");
    return;
  }
  constexpr std::int64_t kElements = 2048 * 1536;
  const std::vector<float> x = values(kElements, 5), dy = values(kElements, 6);
  std::vector<float> out(kElements);
  n::set_simd_path(path);
  for (auto _ : state) {
    if (backward) {
      k::gelu_backward(x.data(), dy.data(), out.data(), kElements);
    } else {
      k::gelu_forward(x.data(), out.data(), kElements);
    }
    benchmark::ClobberMemory();
  }
  n::set_simd_path(n::best_simd_path());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * (backward ? 3 : 2) *
                          kElements * 4);
}

}  // namespace

BENCHMARK_CAPTURE(BM_gelu, forward, false, mantissa::numerics::best_simd_path())
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu, backward, true, mantissa::numerics::best_simd_path())
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu, forward_avx2, false, mantissa::numerics::SimdPath::avx2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_gelu, backward_avx2, true, mantissa::numerics::SimdPath::avx2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_layer_norm_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_layer_norm_backward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_softmax)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_MAIN();
