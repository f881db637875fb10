// A convolution's three products (forward, backward data, backward weights) in GFLOP/s by
// route, on the Fashion CNN's shapes (batch 128: 1 -> 16 channels at 28 x 28, 16 -> 32 at
// 14 x 14, 3 x 3, padding 1) and the wider bench config's (64 -> 128 at 32 x 32... see
// configs/bench/), float32 and bfloat16 values. GFLOP/s count the im2col product's 2 m n k.
//   build/bench/bench_conv --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// The `reference` rows are im2col + the fp32 GEMM (conv2d_product_ref), the others each
// route: `fp32` runs the direct kernels where they fit (stride 1, at most 32 values a patch:
// the first layers; `fp32@avx2` the same on the AVX2 path of an AVX-512 CPU), `onednn_*`
// oneDNN's convolution primitives. The `pool` rows: relu_max_pool2d
// (2 x 2, stride 2) after each CNN convolution, forward and backward, the vector kernels beside
// their scalar twins (the forward on all threads, the backward on one, as training calls them per
// tile), and `avx512_bf16` the bfloat16 kernels on bit patterns (both on all threads, as
// training calls them on bfloat16 tensors).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_values.hpp"
#include "mantissa/kernels/conv.hpp"
#include "mantissa/kernels/conv_route.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace {

namespace k = mantissa::kernels;
using k::MatmulRoute;
using k::ProductKind;
using mantissa::numerics::Format;

std::vector<std::uint8_t> values(std::size_t n, Format f, unsigned seed) {
  return mantissa::bench_inputs::stored_values(n, f, seed);
}

// One product on `route`, or on the reference (im2col + the fp32 GEMM) when `reference`.
void BM_conv(benchmark::State& state, ProductKind kind, k::ConvKey c, Format f, MatmulRoute route,
             bool reference, mantissa::numerics::SimdPath path) {
  mantissa::numerics::set_simd_path(path);
  const std::int64_t oh = (c.height + 2 * c.padding - c.kernel_h) / c.stride + 1;
  const std::int64_t ow = (c.width + 2 * c.padding - c.kernel_w) / c.stride + 1;
  const auto nx = static_cast<std::size_t>(c.batch * c.channels * c.height * c.width);
  const auto nw = static_cast<std::size_t>(c.out_channels * c.channels * c.kernel_h * c.kernel_w);
  const auto ny = static_cast<std::size_t>(c.batch * c.out_channels * oh * ow);
  const auto x = values(nx, f, 1), w = values(nw, f, 2), dy = values(ny, f, 3);
  const std::vector<float> bias(static_cast<std::size_t>(c.out_channels), 0.5f);
  std::vector<float> y(ny), dx(nx), dw(nw), db(bias.size());
  k::ConvBuffers b;
  b.x = k::Operand(x.data(), f);
  b.w = k::Operand(w.data(), f);
  b.dy = k::Operand(dy.data(), f);
  b.bias = bias.data();
  b.y = y.data(), b.dx = dx.data(), b.dw = dw.data(), b.db = db.data();
  const k::GemmPrecision p{f, 1, k::GemmAlgorithm::automatic, route};
  for (auto _ : state) {
    if (reference) {
      k::conv2d_product_ref(kind, c, b, p);
    } else {
      k::conv2d_product_on(route, kind, c, b, p);
    }
    benchmark::ClobberMemory();
  }
  mantissa::numerics::set_simd_path(mantissa::numerics::best_simd_path());
  const k::GemmKey key = k::conv_key(kind, c, f, 1, true);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * key.m * key.n * key.k * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  struct Shape {
    const char* name;
    k::ConvKey c;
  };
  const Shape shapes[] = {
      {"cnn_conv1", {128, 1, 28, 28, 16, 3, 3, 1, 1, true}},
      {"cnn_conv2", {128, 16, 14, 14, 32, 3, 3, 1, 1, true}},
      {"wide_conv1", {128, 1, 28, 28, 64, 3, 3, 1, 1, true}},
      {"wide_conv2", {32, 64, 32, 32, 128, 3, 3, 1, 1, true}},
  };
  for (const Shape& s : shapes) {
    for (ProductKind kind : {ProductKind::conv_forward, ProductKind::conv_backward_data,
                             ProductKind::conv_backward_weights}) {
      for (Format f : {Format::float32, Format::bfloat16}) {
        const k::GemmKey key = k::conv_key(kind, s.c, f, 1, true);
        const std::string row = std::string(s.name) + "/" +
                                std::string(mantissa::name_of(k::kProductKindNames, kind)) + "/" +
                                std::string(mantissa::numerics::name(f)) + "/";
        namespace nu = mantissa::numerics;
        const nu::SimdPath best = nu::best_simd_path();
        benchmark::RegisterBenchmark((row + "reference").c_str(), BM_conv, kind, s.c, f,
                                     MatmulRoute::fp32, true, best)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        for (MatmulRoute r : k::routes_for(key)) {
          benchmark::RegisterBenchmark((row + std::string(k::route_name(r))).c_str(), BM_conv, kind,
                                       s.c, f, r, false, best)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
        // The fp32 route's direct kernels on AVX2 too, where the CPU has AVX-512.
        if (best == nu::SimdPath::avx512) {
          benchmark::RegisterBenchmark((row + "fp32@avx2").c_str(), BM_conv, kind, s.c, f,
                                       MatmulRoute::fp32, false, nu::SimdPath::avx2)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
}

// relu_max_pool2d on `planes` planes of side x side: forward or backward, on a SIMD path, the
// twin, or (bf16) the bfloat16 kernels on bit patterns.
void BM_pool(benchmark::State& state, std::int64_t planes, std::int64_t side, bool backward,
             bool twin, bool bf16, mantissa::numerics::SimdPath path) {
  namespace nu = mantissa::numerics;
  nu::set_simd_path(path);
  const std::int64_t in = side * side, out = (side / 2) * (side / 2);
  const std::vector<float> x =
      mantissa::bench_inputs::normal_values(static_cast<std::size_t>(planes * in), 1);
  std::vector<float> y(static_cast<std::size_t>(planes * out)), dx(x.size());
  std::vector<std::int32_t> at(y.size());
  k::relu_max_pool2d_forward(x.data(), planes, side, side, 2, 2, y.data(), at.data());
  std::vector<std::uint16_t> x16(x.size()), y16(y.size()), dx16(x.size());
  nu::encode_array(x.data(), x.size(), nu::Format::bfloat16, x16.data());
  nu::encode_array(y.data(), y.size(), nu::Format::bfloat16, y16.data());
  for (auto _ : state) {
    if (bf16 && backward) {
      k::relu_max_pool2d_backward_bf16(y16.data(), at.data(), planes, side, side, 2, 2,
                                       dx16.data());
    } else if (bf16) {
      k::relu_max_pool2d_forward_bf16(x16.data(), planes, side, side, 2, 2, y16.data(), at.data());
    } else if (backward && twin) {
      k::relu_max_pool2d_backward_ref(y.data(), at.data(), planes, in, out, dx.data());
    } else if (backward) {
      k::relu_max_pool2d_backward(y.data(), at.data(), planes, side, side, 2, 2, dx.data());
    } else if (twin) {
      k::relu_max_pool2d_forward_ref(x.data(), planes, side, side, 2, 2, y.data(), at.data());
    } else {
      k::relu_max_pool2d_forward(x.data(), planes, side, side, 2, 2, y.data(), at.data());
    }
    benchmark::ClobberMemory();
  }
  nu::set_simd_path(nu::best_simd_path());
  // Input, output and argmax bytes.
  const double bytes =
      static_cast<double>(x.size() + y.size()) * (bf16 ? 2 : 4) + static_cast<double>(y.size()) * 4;
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * bytes,
                                              benchmark::Counter::kIsRate);
}

void register_pools() {
  struct Pool {
    const char* name;
    std::int64_t planes, side;
  };
  for (const Pool& p : {Pool{"cnn_conv1", 128 * 16, 28}, Pool{"cnn_conv2", 128 * 32, 14},
                        Pool{"wide_conv1", 128 * 64, 28}, Pool{"wide_conv2", 128 * 128, 14}}) {
    for (bool backward : {false, true}) {
      namespace nu = mantissa::numerics;
      const auto add = [&](const std::string& variant, bool twin, bool bf16, nu::SimdPath path) {
        benchmark::RegisterBenchmark(
            (std::string("pool/") + p.name + (backward ? "/backward/" : "/forward/") + variant)
                .c_str(),
            BM_pool, p.planes, p.side, backward, twin, bf16, path)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      };
      for (nu::SimdPath path : {nu::SimdPath::avx512, nu::SimdPath::avx2, nu::SimdPath::scalar}) {
        if (!nu::cpu_supports(path)) continue;
        const bool twin = path == nu::SimdPath::scalar;
        add(twin ? std::string("ref") : std::string(nu::simd_path_name(path)), twin, false, path);
        if (path == nu::SimdPath::avx512) add("avx512_bf16", false, true, path);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  register_pools();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu", k::cpu_identity());
  benchmark::AddCustomContext("cpu_features",
                              mantissa::numerics::describe(mantissa::numerics::cpu_features()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
