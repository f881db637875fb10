// AdamW update throughput over 100M float32 parameters beside memcpy, in one run. Bytes count
// what the update must move: read p, g, m, v and write p, m, v (28 bytes a parameter);
// memcpy moves 2 x 400 MB. `of_memcpy` is the update's byte rate over memcpy's.
//   build/bench/bench_optimizer --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "mantissa/kernels/optimizer_updates.hpp"

namespace {

constexpr std::int64_t kParams = 100'000'000;

struct Buffers {
  std::vector<float> p, g, m, v, copy;
  Buffers()
      : p(kParams, 0.5f), g(kParams, 0.01f), m(kParams, 0.0f), v(kParams, 0.0f), copy(kParams) {}
};
Buffers& buffers() {
  static Buffers b;
  return b;
}

double g_memcpy_rate = 0;

void BM_memcpy(benchmark::State& state) {
  Buffers& b = buffers();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::memcpy(b.copy.data(), b.p.data(), kParams * 4);
    benchmark::ClobberMemory();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_memcpy_rate = 8.0 * kParams * static_cast<double>(state.iterations()) / s;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 8 * kParams);
}

void BM_adamw(benchmark::State& state) {
  Buffers& b = buffers();
  mantissa::kernels::AdamArgs a{1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, true, true, 1};
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    // As the optimizer runs it: ranges of 32 Ki elements spread over the threads.
    constexpr std::int64_t kRange = std::int64_t{1} << 15;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < kParams; i += kRange) {
      const std::int64_t n = std::min(kRange, kParams - i);
      mantissa::kernels::adam_update(b.p.data() + i, b.g.data() + i, b.m.data() + i, b.v.data() + i,
                                     n, a);
    }
    ++a.step;
    benchmark::ClobberMemory();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = 28.0 * kParams * static_cast<double>(state.iterations()) / s;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 28 * kParams);
  if (g_memcpy_rate > 0) state.counters["of_memcpy"] = rate / g_memcpy_rate;
}

}  // namespace

BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_adamw)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_MAIN();
