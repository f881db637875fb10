// What "which layer loses what" and the overflow attribution cost (docs/PERFORMANCE.md):
//  - the kernels: any_nonfinite (the attribution's check of every gradient an op makes) and
//    measure_quantization (a sampled step's statistics), with their scalar twins, on GPT-ref's
//    activation sizes;
//  - a GPT-ref forward and backward (batch 8, context 256, bfloat16 or float16) plain, under a
//    NonfiniteWatch (what every trainer step pays) and on a sampled step (a QuantProbe active),
//    the three interleaved in every iteration so that the machine's noise hits each alike. The
//    counters are the watched and sampled steps' times over the plain one's (medians), and the
//    bytes of gradients the watch read per step (checked_MB): at any_nonfinite's rate, its cost.
//   build/bench/bench_precision_probe --benchmark_filter=step --benchmark_min_time=1x
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "bench_values.hpp"
#include "mantissa/autograd/nonfinite_watch.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/precision/quant_probe.hpp"
#include "mantissa/quant/quant_measure.hpp"

namespace {

namespace m = mantissa;
using m::numerics::Format;

constexpr std::int64_t kRows = 2048, kCols = 1536;  // GPT-ref's fc output: 8 x 256 tokens

void BM_any_nonfinite(benchmark::State& state, Format f, bool ref) {
  const auto data = m::bench_inputs::stored_values(kRows * kCols, f, 1);
  for (auto _ : state) {
    const bool found = ref ? m::kernels::any_nonfinite_ref(data.data(), f, kRows * kCols)
                           : m::kernels::any_nonfinite(data.data(), f, kRows * kCols);
    benchmark::DoNotOptimize(found);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kRows * kCols *
                          m::numerics::traits(f).storage_bytes);
}

void BM_measure_quantization(benchmark::State& state, Format f, bool ref) {
  const std::vector<float> x = m::bench_inputs::normal_values(kRows * kCols, 2);
  const auto q = m::bench_inputs::stored_values(kRows * kCols, f, 2);
  for (auto _ : state) {
    const m::precision::QuantStats s =
        ref ? m::quant::measure_quantization_ref(x.data(), Format::float32, q.data(), f,
                                                 kRows * kCols)
            : m::quant::measure_quantization(x.data(), Format::float32, q.data(), f, kRows * kCols);
    benchmark::DoNotOptimize(s.noise());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kRows * kCols);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GPT-ref's forward and backward in `half`: plain, watched, sampled, interleaved.
void BM_gpt_ref_step(benchmark::State& state, Format half) {
  m::nn::GptConfig c;  // GPT-ref: the defaults are its shape
  m::nn::Gpt model(c, 0);
  constexpr std::int64_t kBatch = 8, kContext = 256;
  std::vector<std::int32_t> ids(kBatch * kContext), targets(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::int32_t>((i * 37) % 256);
    targets[i] = static_cast<std::int32_t>((i * 37 + 1) % 256);
  }
  const m::precision::Autocast cast{m::precision::Policy(half)};
  double watched_bytes = 0;
  const auto step = [&](int variant) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::optional<m::autograd::NonfiniteWatch> watch;
      m::precision::QuantProbe probe;
      const m::precision::ProbeScope sampled(variant == 2 ? &probe : nullptr);
      if (variant >= 1) watch.emplace();  // a trainer's every step: watched
      m::autograd::backward(m::autograd::scale(model.loss(ids, targets, kBatch, kContext), 1024));
      for (auto& p : model.parameters()) p.zero_grad();
      if (watch) watched_bytes = static_cast<double>(watch->bytes_read());
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  step(0);  // warm-up: routes, pools
  std::vector<double> plain, watched, sampled;
  for (auto _ : state) {
    plain.push_back(step(0));
    watched.push_back(step(1));
    sampled.push_back(step(2));
    state.SetIterationTime(plain.back());
  }
  state.counters["watched/plain"] = median(watched) / median(plain);
  state.counters["sampled/plain"] = median(sampled) / median(plain);
  state.counters["plain_s"] = median(plain);
  state.counters["checked_MB"] = watched_bytes / 1e6;  // what the watch read per step
}

BENCHMARK_CAPTURE(BM_any_nonfinite, bfloat16, Format::bfloat16, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_any_nonfinite, bfloat16_ref, Format::bfloat16, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_any_nonfinite, float32, Format::float32, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_measure_quantization, bfloat16, Format::bfloat16, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_measure_quantization, bfloat16_ref, Format::bfloat16, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_ref_step, bfloat16, Format::bfloat16)->UseManualTime()->Iterations(5);
BENCHMARK_CAPTURE(BM_gpt_ref_step, float16, Format::float16)->UseManualTime()->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
