// Bulk conversion throughput per format and direction, beside memcpy of the same 64 MiB of
// float32, in one run. Rates count bytes read plus bytes written; `of_memcpy` is the
// conversion's rate over memcpy's rate measured by this same process.
//   build/bench/bench_convert --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/quant/fp8_cast.hpp"

namespace {

using mantissa::numerics::Format;
using mantissa::numerics::Rounding;
using mantissa::numerics::SimdPath;
using mantissa::numerics::Stores;

constexpr std::size_t kBytes = 64u << 20;
constexpr std::size_t kFloats = kBytes / sizeof(float);

// src: normal values (mean 0, deviation 1). wide: the same times 2^-k, k uniform in 0..47,
// magnitudes from ~4 down past 2^-50, as gradients and attention probabilities spread: in
// cbfloat16 and fp8 many results are subnormal or zero.
struct Buffers {
  std::vector<float> src, wide, back;
  std::vector<std::uint8_t> packed;
  std::vector<std::uint8_t> copy_src, copy_dst;
  Buffers()
      : src(kFloats),
        wide(kFloats),
        back(kFloats),
        packed(kBytes),
        copy_src(kBytes, 1),
        copy_dst(kBytes) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& x : src) x = d(rng);
    for (std::size_t i = 0; i < kFloats; ++i) {
      wide[i] = std::ldexp(src[i], -static_cast<int>(rng() % 48));
    }
  }
};

Buffers& buffers() {
  static Buffers b;
  return b;
}

// memcpy of 64 MiB: median of 9 timings, in bytes (read + written) per second.
double memcpy_rate() {
  static const double rate = [] {
    Buffers& b = buffers();
    std::vector<double> t;
    for (int i = 0; i < 9; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(b.copy_dst.data(), b.copy_src.data(), kBytes);
      benchmark::ClobberMemory();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return 2.0 * kBytes / t[t.size() / 2];
  }();
  return rate;
}

using Clock = std::chrono::steady_clock;

void report(benchmark::State& state, std::size_t bytes_per_iteration, Clock::time_point start) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double bytes = static_cast<double>(state.iterations()) * bytes_per_iteration;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["of_memcpy"] = bytes / seconds / memcpy_rate();
}

void BM_memcpy(benchmark::State& state) {
  Buffers& b = buffers();
  memcpy_rate();
  const auto start = Clock::now();
  for (auto _ : state) {
    std::memcpy(b.copy_dst.data(), b.copy_src.data(), kBytes);
    benchmark::ClobberMemory();
  }
  report(state, 2 * kBytes, start);
}

void encode_bench(benchmark::State& state, Format f, Rounding r, SimdPath path, Stores stores,
                  bool wide) {
  mantissa::numerics::set_simd_path(path);
  Buffers& b = buffers();
  const std::vector<float>& in = wide ? b.wide : b.src;
  mantissa::numerics::ConvertOptions opt;
  opt.rounding = r;
  opt.seed = 1;
  opt.stores = stores;
  memcpy_rate();
  const auto start = Clock::now();
  for (auto _ : state) {
    mantissa::numerics::encode_array(in.data(), kFloats, f, b.packed.data(), opt);
    benchmark::ClobberMemory();
  }
  report(state, kBytes + kFloats * mantissa::numerics::traits(f).storage_bytes, start);
  mantissa::numerics::set_simd_path(mantissa::numerics::best_simd_path());
}

void decode_bench(benchmark::State& state, Format f, SimdPath path,
                  mantissa::numerics::Stores stores) {
  mantissa::numerics::set_simd_path(path);
  Buffers& b = buffers();
  mantissa::numerics::encode_array(b.src.data(), kFloats, f, b.packed.data());
  memcpy_rate();
  const auto start = Clock::now();
  for (auto _ : state) {
    mantissa::numerics::decode_array(b.packed.data(), kFloats, f, b.back.data(), stores);
    benchmark::ClobberMemory();
  }
  report(state, kBytes + kFloats * mantissa::numerics::traits(f).storage_bytes, start);
  mantissa::numerics::set_simd_path(mantissa::numerics::best_simd_path());
}

// The fp8 linear layer's cast (quant/fp8_cast.hpp): 64 MiB of float32 (or the same values
// stored in bfloat16) scaled, counted and encoded to fp8 on all threads (ref: one thread).
void fp8_cast_bench(benchmark::State& state, Format from, Format fp8, bool ref) {
  Buffers& b = buffers();
  const std::size_t n = ref ? kFloats / 16 : kFloats;
  std::vector<std::uint8_t> src(n * 4);
  mantissa::numerics::encode_array(b.src.data(), n, from, src.data());
  memcpy_rate();
  const auto start = Clock::now();
  for (auto _ : state) {
    const auto cast = ref ? mantissa::quant::cast_to_fp8_ref : mantissa::quant::cast_to_fp8;
    benchmark::DoNotOptimize(
        cast(src.data(), from, static_cast<std::int64_t>(n), 3.0f, fp8, b.packed.data()));
    benchmark::ClobberMemory();
  }
  report(state, n * (mantissa::numerics::traits(from).storage_bytes + 1), start);
}

// float16 / cbfloat16 codes rounded to bfloat16 (POL 2's operands for bf16 products), on a
// path: blocks decoded to float32 and encoded (bfloat16's encode 16 lanes wide on avx512);
// scalar is the codec (the _ref twin).
// n: 64 MiB of float32's count (memory-bound) or 2^16 (the codes and results in L2).
void to_bf16_bench(benchmark::State& state, Format from, SimdPath path, std::size_t n) {
  mantissa::numerics::set_simd_path(path);
  Buffers& b = buffers();
  mantissa::numerics::encode_array(b.src.data(), n, from, b.packed.data());
  std::vector<std::uint16_t> out(n);
  memcpy_rate();
  const auto start = Clock::now();
  for (auto _ : state) {
    mantissa::numerics::convert_array(b.packed.data(), from, n, out.data(), Format::bfloat16);
    benchmark::ClobberMemory();
  }
  report(state, n * 4, start);
  mantissa::numerics::set_simd_path(mantissa::numerics::best_simd_path());
}

void register_all() {
  benchmark::RegisterBenchmark("memcpy/64MiB", BM_memcpy)->Unit(benchmark::kMillisecond);
  const SimdPath best = mantissa::numerics::best_simd_path();
  for (Format f : mantissa::numerics::kNarrowFormats) {
    const std::string n(mantissa::numerics::name(f));
    for (Rounding r : {Rounding::nearest_even, Rounding::stochastic}) {
      const std::string rn(mantissa::numerics::rounding_name(r));
      benchmark::RegisterBenchmark(("encode/" + n + "/" + rn).c_str(), encode_bench, f, r, best,
                                   Stores::cached, false)
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("encode_wide/" + n + "/nearest_even").c_str(), encode_bench, f,
                                 Rounding::nearest_even, best, Stores::cached, true)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decode/" + n).c_str(), decode_bench, f, best, Stores::cached)
        ->Unit(benchmark::kMillisecond);
    // Streaming stores (the Python package's large results): where the path has them.
    benchmark::RegisterBenchmark(("encode_streaming/" + n + "/nearest_even").c_str(), encode_bench,
                                 f, Rounding::nearest_even, best, Stores::streaming, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decode_streaming/" + n).c_str(), decode_bench, f, best,
                                 Stores::streaming)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encode_ref/" + n + "/nearest_even").c_str(), encode_bench, f,
                                 Rounding::nearest_even, SimdPath::scalar, Stores::cached, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decode_ref/" + n).c_str(), decode_bench, f, SimdPath::scalar,
                                 Stores::cached)
        ->Unit(benchmark::kMillisecond);
  }
  for (Format from : {Format::float16, Format::cbfloat16}) {
    for (SimdPath p : {SimdPath::avx512, SimdPath::avx2, SimdPath::scalar}) {
      if (!mantissa::numerics::cpu_supports(p)) continue;
      for (const std::size_t n : {kFloats, std::size_t{1} << 16}) {
        const std::string name = "to_bf16/" + std::string(mantissa::numerics::name(from)) + "/" +
                                 std::string(mantissa::numerics::simd_path_name(p)) + "/" +
                                 std::to_string(n);
        benchmark::RegisterBenchmark(name.c_str(), to_bf16_bench, from, p, n)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  for (Format from : {Format::float32, Format::bfloat16}) {
    for (Format fp8 : {Format::float8_e4m3, Format::float8_e5m2}) {
      const std::string n = std::string(mantissa::numerics::name(from)) + "_to_" +
                            std::string(mantissa::numerics::name(fp8));
      for (const bool ref : {false, true}) {
        benchmark::RegisterBenchmark(((ref ? "fp8_cast_ref/" : "fp8_cast/") + n).c_str(),
                                     fp8_cast_bench, from, fp8, ref)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext(
      "simd_path",
      std::string(mantissa::numerics::simd_path_name(mantissa::numerics::best_simd_path())));
  benchmark::AddCustomContext("cpu_features",
                              mantissa::numerics::describe(mantissa::numerics::cpu_features()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
