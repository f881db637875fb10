// GEMM GFLOP/s per format and precision_opt_level on the GPT-ref shapes (DESIGN.md
// section 8), beside the machine's oneDNN fp32 peak (2048^3) measured in the same run, and
// the fused causal attention forward+backward at GPT-ref size.
//   build/bench/bench_gemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "mantissa/kernels/attention.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/precision/policy.hpp"

namespace {

using mantissa::kernels::GemmAlgorithm;
using mantissa::kernels::GemmShape;
using mantissa::numerics::Format;

std::vector<float> values(std::size_t n, Format f, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  mantissa::numerics::round_to_format(v.data(), n, f);
  return v;
}

void BM_gemm(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k, Format f,
             int pol, GemmAlgorithm algo) {
  const auto a = values(static_cast<std::size_t>(m * k), f, 1);
  const auto b = values(static_cast<std::size_t>(k * n), f, 2);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  const GemmShape s = GemmShape::dense(m, n, k);
  const mantissa::kernels::GemmPrecision p{f, mantissa::precision::matmul_passes(f, pol), algo};
  for (auto _ : state) {
    mantissa::kernels::gemm(s, a.data(), b.data(), c.data(), false, p);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_attention(benchmark::State& state, bool backward) {
  const std::int64_t bh = 8 * 6, t = 256, d = 64;
  const std::size_t n = static_cast<std::size_t>(bh * t * d);
  const auto q = values(n, Format::float32, 3), k = values(n, Format::float32, 4),
             v = values(n, Format::float32, 5), g = values(n, Format::float32, 6);
  std::vector<float> o(n), lse(static_cast<std::size_t>(bh * t)), dq(n), dk(n), dv(n);
  const float scale = 0.125f;
  for (auto _ : state) {
    mantissa::kernels::attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), bh, t,
                                         d, scale);
    if (backward) {
      mantissa::kernels::attention_backward(q.data(), k.data(), v.data(), o.data(), lse.data(),
                                            g.data(), dq.data(), dk.data(), dv.data(), bh, t, d,
                                            scale);
    }
    benchmark::DoNotOptimize(o.data());
  }
  // Causal: half the score matrix. Forward 2 products, backward 5 (incl. recompute).
  const double flops = 2.0 * bh * t * t * d / 2.0 * (backward ? 7 : 2);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  benchmark::RegisterBenchmark("peak/onednn_fp32/2048x2048x2048", BM_gemm, 2048, 2048, 2048,
                               Format::float32, 1, GemmAlgorithm::automatic)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  struct S {
    std::int64_t m, n, k;
  };
  // qkv projection, MLP up, MLP down (rows = batch 8 x context 256).
  for (const S& s : {S{2048, 1152, 384}, S{2048, 1536, 384}, S{2048, 384, 1536}}) {
    const std::string shape =
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    benchmark::RegisterBenchmark(("gemm/float32/" + shape).c_str(), BM_gemm, s.m, s.n, s.k,
                                 Format::float32, 1, GemmAlgorithm::automatic)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("gemm/bfloat16/" + shape).c_str(), BM_gemm, s.m, s.n, s.k,
                                 Format::bfloat16, 1, GemmAlgorithm::automatic)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    for (Format f : {Format::float16, Format::cbfloat16}) {
      for (int pol : {0, 1, 2}) {
        for (GemmAlgorithm algo : {GemmAlgorithm::automatic, GemmAlgorithm::decomposed}) {
          const std::string name =
              "gemm/" + std::string(mantissa::numerics::name(f)) + "/pol" + std::to_string(pol) +
              "/" + (algo == GemmAlgorithm::automatic ? "auto" : "decomposed") + "/" + shape;
          benchmark::RegisterBenchmark(name.c_str(), BM_gemm, s.m, s.n, s.k, f, pol, algo)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  benchmark::RegisterBenchmark("attention/forward/b8h6t256d64", BM_attention, false)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("attention/forward_backward/b8h6t256d64", BM_attention, true)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("native_bf16_gemm",
                              mantissa::kernels::native_bf16_gemm_available() ? "yes" : "no");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
