// Block-scaled quantization throughput (block_scaling.hpp): each recipe's quantizer beside its
// scalar twin on the same 4096 x 4096 float32 matrix (64 MiB), in one run. Rates count the
// float32 bytes read; `of_ref` is the quantizer's rate over its twin's, measured by this
// same process.
//   build/bench/bench_block_scaling --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace {

namespace n = mantissa::numerics;

constexpr std::int64_t kRows = 4096, kCols = 4096;

const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::vector<float> v(static_cast<std::size_t>(kRows * kCols));
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& f : v) f = d(rng);
    return v;
  }();
  return x;
}

using Quantizer = std::function<n::BlockQuantized(const float*)>;
struct Recipe {
  std::string name;
  Quantizer fast, ref;
};

std::vector<Recipe> recipes() {
  std::vector<Recipe> out;
  for (n::Format f : {n::Format::float8_e4m3, n::Format::float6_e2m3, n::Format::float4_e2m1}) {
    n::MxSettings s;
    s.element = f;
    s.rule = n::MxScaleRule::rceil;
    out.push_back({"mx/" + std::string(n::name(f)) + "/1x32",
                   [s](const float* x) { return n::quantize_mx(x, kRows, kCols, s); },
                   [s](const float* x) { return n::quantize_mx_ref(x, kRows, kCols, s); }});
  }
  n::MxSettings col;
  col.tile = {32, 1};
  out.push_back({"mx/float8_e4m3/32x1",
                 [col](const float* x) { return n::quantize_mx(x, kRows, kCols, col); },
                 [col](const float* x) { return n::quantize_mx_ref(x, kRows, kCols, col); }});
  n::Nvfp4Settings nv;
  out.push_back({"nvfp4/1x16",
                 [nv](const float* x) { return n::quantize_nvfp4(x, kRows, kCols, nv); },
                 [nv](const float* x) { return n::quantize_nvfp4_ref(x, kRows, kCols, nv); }});
  n::Nvfp4Settings grad;
  grad.hadamard = true;
  grad.rounding = n::Rounding::stochastic;
  out.push_back({"nvfp4/1x16/rht/stochastic",
                 [grad](const float* x) { return n::quantize_nvfp4(x, kRows, kCols, grad); },
                 [grad](const float* x) { return n::quantize_nvfp4_ref(x, kRows, kCols, grad); }});
  n::Fp8BlockSettings b;
  out.push_back({"fp8_blocks/1x128",
                 [b](const float* x) { return n::quantize_fp8_blocks(x, kRows, kCols, b); },
                 [b](const float* x) { return n::quantize_fp8_blocks_ref(x, kRows, kCols, b); }});
  n::Fp8BlockSettings cur;
  cur.tile = {kRows, kCols};
  cur.power_of_two = false;
  out.push_back(
      {"fp8_current/tensor",
       [cur](const float* x) { return n::quantize_fp8_blocks(x, kRows, kCols, cur); },
       [cur](const float* x) { return n::quantize_fp8_blocks_ref(x, kRows, kCols, cur); }});
  return out;
}

// Bytes of float32 read per second, by recipe and path, for the of_ref counter.
std::map<std::string, double>& rates() {
  static std::map<std::string, double> r;
  return r;
}

void run(benchmark::State& state, const Quantizer& q, const std::string& key,
         const std::string& twin_key) {
  const float* x = input().data();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(q(x));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double bytes = static_cast<double>(state.iterations()) * kRows * kCols * sizeof(float);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  rates()[key] = bytes / seconds;
  if (!twin_key.empty() && rates().count(twin_key) != 0) {
    state.counters["of_ref"] = rates()[key] / rates()[twin_key];
  }
}

}  // namespace

int main(int argc, char** argv) {
  input();
  for (const Recipe& r : recipes()) {
    // The twin first, so that the fast path's row can show its ratio.
    benchmark::RegisterBenchmark(("ref/" + r.name).c_str(), run, r.ref, "ref/" + r.name, "")
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(r.name.c_str(), run, r.fast, r.name, "ref/" + r.name)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("simd_path", std::string(n::simd_path_name(n::best_simd_path())));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
