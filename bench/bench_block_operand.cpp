// Block-scaled GEMM operands (quant/block_operand.hpp) on a linear layer's shapes: the
// quantization into an operand at its width (quantize_packed), its decode to bfloat16
// beside the scalar twin, the quantization of the same matrix stored as bfloat16 (values and
// codes), and a whole block-scaled product beside the plain bfloat16 product of the same
// shape, and the delayed-scaling fp8 cast (quant/fp8_cast.hpp) of the same matrix, in one run.
//   build/bench/bench_block_operand --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_values.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/quant/block_operand.hpp"
#include "mantissa/quant/fp8_cast.hpp"

namespace {

namespace k = mantissa::kernels;
namespace q = mantissa::quant;
namespace n = mantissa::numerics;

// GPT-ref's largest activation: 2048 tokens x 1536 features.
constexpr std::int64_t kRows = 2048, kCols = 1536;

const std::vector<float>& input() {
  static const std::vector<float> x =
      mantissa::bench_inputs::normal_values(static_cast<std::size_t>(kRows * kCols), 1);
  return x;
}

q::BlockSpec spec(int which) {
  switch (which) {
    case 0: {
      n::MxSettings s;  // mxfp8, row-wise
      return s;
    }
    case 1: {
      n::MxSettings s;  // mxfp8, column-wise
      s.tile = {32, 1};
      return s;
    }
    case 2: {
      n::MxSettings s;
      s.element = n::Format::float4_e2m1;
      return s;
    }
    case 3: {
      n::Nvfp4Settings s;
      return s;
    }
    case 5: {
      n::Nvfp4Settings s;  // a gradient's row-wise copy
      s.rounding = n::Rounding::stochastic;
      s.seed = 1;
      return s;
    }
    case 6: {
      n::Fp8BlockSettings s;  // current scaling: one float32 scale for the whole tensor
      s.tile = {kRows, kCols};
      s.power_of_two = false;
      return s;
    }
    default: {
      n::Fp8BlockSettings s;  // power-of-two scales (the default)
      return s;
    }
  }
}
const char* kNames[] = {"mxfp8/1x32",        "mxfp8/32x1",       "mxfp4/1x32",
                        "nvfp4/1x16",        "fp8_blocks/1x128", "nvfp4/1x16 stochastic",
                        "fp8_current/tensor"};

void set_rate(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * kRows * kCols *
                          static_cast<std::int64_t>(sizeof(float)));
}

void BM_Quantize(benchmark::State& state) {
  const q::BlockSpec s = spec(static_cast<int>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(
        q::quantize_packed(input().data(), n::Format::float32, kRows, kCols, s));
  state.SetLabel(kNames[state.range(0)]);
  set_rate(state);
}

// The same on the AVX2 bands an AVX2-only CPU runs (numerics::set_simd_path), on a CPU that
// also has AVX-512.
void BM_QuantizeAvx2(benchmark::State& state) {
  const n::SimdPath best = n::best_simd_path();
  if (!n::cpu_supports(n::SimdPath::avx2)) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  n::set_simd_path(n::SimdPath::avx2);
  BM_Quantize(state);
  n::set_simd_path(best);
}

// The values of an operand read once, straight from float32 (quantize_to_bf16) against
// quantize_packed followed by dequantize_to_bf16 (the twin's way, on the fast kernels).
template <bool kFused>
void BM_QuantizeToBf16(benchmark::State& state) {
  const q::BlockSpec s = spec(static_cast<int>(state.range(0)));
  std::vector<std::uint16_t> out(input().size());
  for (auto _ : state) {
    if (kFused) {
      benchmark::DoNotOptimize(
          q::quantize_to_bf16(input().data(), n::Format::float32, kRows, kCols, s, out.data()));
    } else {
      benchmark::DoNotOptimize(q::dequantize_to_bf16(
          q::quantize_packed(input().data(), n::Format::float32, kRows, kCols, s), out.data()));
    }
  }
  state.SetLabel(kNames[state.range(0)]);
  set_rate(state);
}

// The same matrix stored as bfloat16, as a linear layer's H activations and gradients come
// in: its values (a copy read once) and its codes (a kept copy), mxfp8 both ways.
const std::vector<std::uint16_t>& input_bf16() {
  static const std::vector<std::uint16_t> x = [] {
    std::vector<std::uint16_t> b(input().size());
    n::encode_array(input().data(), b.size(), n::Format::bfloat16, b.data());
    return b;
  }();
  return x;
}

template <bool kCodes>
void BM_FromBf16(benchmark::State& state) {
  const q::BlockSpec s = spec(static_cast<int>(state.range(0)));
  std::vector<std::uint16_t> out(input().size());
  for (auto _ : state) {
    if (kCodes) {
      benchmark::DoNotOptimize(
          q::quantize_packed(input_bf16().data(), n::Format::bfloat16, kRows, kCols, s));
    } else {
      benchmark::DoNotOptimize(q::quantize_to_bf16(input_bf16().data(), n::Format::bfloat16, kRows,
                                                   kCols, s, out.data()));
    }
  }
  state.SetLabel(std::string(kNames[state.range(0)]) + (kCodes ? " codes" : " values"));
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 2);
}

template <bool kRef>
void BM_DecodeBf16(benchmark::State& state) {
  const q::PackedBlocks q = q::quantize_packed(input().data(), n::Format::float32, kRows, kCols,
                                               spec(static_cast<int>(state.range(0))));
  std::vector<std::uint16_t> out(input().size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(kRef ? q::dequantize_to_bf16_ref(q, out.data())
                                  : q::dequantize_to_bf16(q, out.data()));
  }
  state.SetLabel(kNames[state.range(0)]);
  set_rate(state);
}

// The delayed-scaling cast of an fp8 linear layer's operand (amax, overflow and underflow
// counts, codes: one pass): from bfloat16 (activations, gradients) or float32 (master
// weights), to e4m3 (arg 0) or e5m2 (arg 1).
template <bool kBf16>
void BM_Fp8Cast(benchmark::State& state) {
  const n::Format fp8 = state.range(0) == 0 ? n::Format::float8_e4m3 : n::Format::float8_e5m2;
  const void* src = kBf16 ? static_cast<const void*>(input_bf16().data())
                          : static_cast<const void*>(input().data());
  std::vector<std::uint8_t> out(input().size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(q::cast_to_fp8(src, kBf16 ? n::Format::bfloat16 : n::Format::float32,
                                            kRows * kCols, 16.0f, fp8, out.data()));
  }
  state.SetLabel(std::string(kBf16 ? "bfloat16 to " : "float32 to ") + std::string(n::name(fp8)));
  state.SetBytesProcessed(state.iterations() * kRows * kCols * (kBf16 ? 2 : 4));
}

// y [2048, 384] = x [2048, 1536] W^T: the block-scaled product (decode included) against the
// plain product of bfloat16 operands.
void BM_Product(benchmark::State& state) {
  constexpr std::int64_t kOut = 384;
  const bool blocks = state.range(0) != 0;
  const std::vector<float>& x = input();
  const q::PackedBlocks qx =
      q::quantize_packed(x.data(), n::Format::float32, kRows, kCols, spec(0));
  const q::PackedBlocks qw = q::quantize_packed(x.data(), n::Format::float32, kOut, kCols, spec(0));
  std::vector<std::uint16_t> xb(x.size()), wb(static_cast<std::size_t>(kOut * kCols));
  n::encode_array(x.data(), xb.size(), n::Format::bfloat16, xb.data());
  n::encode_array(x.data(), wb.size(), n::Format::bfloat16, wb.data());
  std::vector<float> y(static_cast<std::size_t>(kRows * kOut));
  const k::GemmShape shape = k::GemmShape::dense(kRows, kOut, kCols, false, true);
  for (auto _ : state) {
    if (blocks) {
      q::block_scaled_gemm(
          shape, qx, qw, [&](const k::GemmTile&) {}, mantissa::precision::MatmulRoute::automatic);
    } else {
      k::gemm(shape, k::Operand(xb.data(), n::Format::bfloat16),
              k::Operand(wb.data(), n::Format::bfloat16), y.data(), false,
              {n::Format::bfloat16, 1, k::GemmAlgorithm::automatic,
               mantissa::precision::MatmulRoute::automatic});
    }
  }
  state.SetLabel(blocks ? "mxfp8 operands (decode + bf16 GEMM)" : "bfloat16 operands");
  state.counters["GFLOP/s"] = benchmark::Counter(
      shape.flops() * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Quantize)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_QuantizeAvx2)->DenseRange(0, 6)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_QuantizeToBf16<true>)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_QuantizeToBf16<false>)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_FromBf16<false>)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FromBf16<true>)->Arg(0)->Arg(1)->Arg(6)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Fp8Cast<true>)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Fp8Cast<false>)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeBf16<false>)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeBf16<true>)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Product)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
