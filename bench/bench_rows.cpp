// Row kernels at GPT-ref's sizes (2048 rows of 384): layer norm forward and backward and
// softmax, on all threads. CPU time is the calling thread's; compare real time within a run.
//   build/bench/bench_rows --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_values.hpp"
#include "mantissa/kernels/rows.hpp"

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

}  // namespace

BENCHMARK(BM_layer_norm_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_layer_norm_backward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_softmax)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_MAIN();
