// GEMM GFLOP/s by route and operand storage on the GPT-ref shapes (docs/design.md section 8), with
// oneDNN's fp32 matmul (the peer) on the same shapes in the same run, and the fused causal
// attention forward+backward at GPT-ref size, and the fused bf16 attention's block product.
//   build/bench/bench_gemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// Shapes are m x n x k with the layouts the model uses: NT (forward: x W^T), NN (dX = G W),
// TN (dW = G^T X).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench_values.hpp"
#include "mantissa/kernels/attention.hpp"
#include "mantissa/kernels/bf16_pairs.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/precision/policy.hpp"
#include "packing.hpp"  // the GEMM's private packing (src/kernels/gemm)

namespace {

namespace k = mantissa::kernels;
using k::GemmRoute;
using k::GemmShape;
using mantissa::numerics::Format;

std::vector<std::uint8_t> values(std::size_t n, Format f, unsigned seed) {
  return mantissa::bench_inputs::stored_values(n, f, seed);
}

GemmShape layout(std::int64_t m, std::int64_t n, std::int64_t kk, const std::string& form) {
  return GemmShape::dense(m, n, kk, form[0] == 'T', form[1] == 'T');
}

// Our GEMM: operands stored in `storage`, holding values of `f`.
void BM_ours(benchmark::State& state, GemmShape s, Format f, int pol, GemmRoute route) {
  const auto a = values(static_cast<std::size_t>(s.m * s.k), f, 1);
  const auto b = values(static_cast<std::size_t>(s.k * s.n), f, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  const k::GemmPrecision p{f, mantissa::precision::matmul_passes(f, pol),
                           k::GemmAlgorithm::automatic, route};
  for (auto _ : state) {
    k::gemm(s, k::Operand(a.data(), f), k::Operand(b.data(), f), c.data(), false, p);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_onednn(benchmark::State& state, GemmShape s) {
  const auto a = values(static_cast<std::size_t>(s.m * s.k), Format::float32, 1);
  const auto b = values(static_cast<std::size_t>(s.k * s.n), Format::float32, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  for (auto _ : state) {
    k::gemm_onednn_f32(s, reinterpret_cast<const float*>(a.data()),
                       reinterpret_cast<const float*>(b.data()), c.data(), false);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<float> f32_values(std::size_t n, unsigned seed) {
  const auto raw = values(n, Format::float32, seed);
  std::vector<float> v(n);
  std::memcpy(v.data(), raw.data(), n * sizeof(float));
  return v;
}

// Attention of 8 x 6 heads, t 256, d 64, in float32 or with bfloat16 values (operands,
// probabilities and score gradients rounded to bfloat16, products on the route `route`).
void BM_attention(benchmark::State& state, bool backward, Format half, GemmRoute route) {
  const std::int64_t bh = 8 * 6, t = 256, d = 64;
  const std::size_t n = static_cast<std::size_t>(bh * t * d);
  auto q = f32_values(n, 3), kk = f32_values(n, 4), v = f32_values(n, 5), g = f32_values(n, 6);
  k::AttentionPrecision pr;
  pr.half = half;
  pr.gemm = {half, 1, k::GemmAlgorithm::automatic, route};
  if (half != Format::float32) {
    for (auto* x : {&q, &kk, &v, &g}) mantissa::numerics::round_to_format(x->data(), n, half);
  }
  std::vector<float> o(n), lse(static_cast<std::size_t>(bh * t)), dq(n), dk(n), dv(n);
  const float scale = 0.125f;
  for (auto _ : state) {
    k::attention_forward(q.data(), kk.data(), v.data(), o.data(), lse.data(), bh, t, d, scale, pr);
    if (backward) {
      k::attention_backward(q.data(), kk.data(), v.data(), o.data(), lse.data(), g.data(),
                            dq.data(), dk.data(), dv.data(), bh, t, d, scale, pr);
    }
    benchmark::DoNotOptimize(o.data());
  }
  // Causal: half the score matrix. Forward 2 products, backward 5 (incl. recompute).
  const double flops = 2.0 * bh * t * t * d / 2.0 * (backward ? 7 : 2);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The same heads as GPT-ref's model runs them: q, k and v as columns of one [8, 256, 3 x 384]
// tensor (the fused QKV product's output), o and dO [8, 256, 384], the gradient
// [8, 256, 3 x 384] (autograd's ops_attention.cpp), all stored in `f`: bfloat16 as a bfloat16
// run stores them, float32 as a float32 run does.
void BM_attention_model(benchmark::State& state, bool backward, Format f, GemmRoute route) {
  const k::AttentionShape s{8, 6, 256, 64};
  const std::int64_t c = s.heads * s.d, rows = s.batch * s.t;
  const std::int64_t bytes = mantissa::numerics::traits(f).storage_bytes;
  const auto qkv = values(static_cast<std::size_t>(rows * 3 * c), f, 3);
  const auto g = values(static_cast<std::size_t>(rows * c), f, 6);
  std::vector<std::uint8_t> o(static_cast<std::size_t>(rows * c * bytes));
  std::vector<float> lse(static_cast<std::size_t>(s.batch * s.heads * s.t));
  std::vector<std::uint8_t> d(static_cast<std::size_t>(rows * 3 * c * bytes));
  k::AttentionPrecision pr;
  pr.half = f;
  pr.gemm = {f, 1, k::GemmAlgorithm::automatic, route};
  const k::HeadLayout in = k::HeadLayout::interleaved(s, 3 * c),
                      out = k::HeadLayout::interleaved(s, c);
  const auto at = [&](std::int64_t offset) { return k::Operand{qkv.data() + bytes * offset, f}; };
  const float scale = 0.125f;
  for (auto _ : state) {
    k::attention_forward(s, in, at(0), at(c), at(2 * c), out, {o.data(), f}, lse.data(), scale, pr);
    if (backward) {
      k::attention_backward(
          s, in, at(0), at(c), at(2 * c), out, {o.data(), f}, {g.data(), f}, lse.data(),
          {d.data(), d.data() + bytes * c, d.data() + 2 * bytes * c, f}, scale, pr);
    }
    benchmark::DoNotOptimize(o.data());
  }
  const double flops = 2.0 * s.batch * s.heads * s.t * s.t * s.d / 2.0 * (backward ? 7 : 2);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One block product of the fused bf16 attention: 64 query rows x t keys x d (as d / 2 pair
// words), operands already packed (kernels/bf16_pairs.hpp), as the kernel runs it per block.
void BM_pair_product(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t pairs) {
  std::vector<std::uint32_t> a(static_cast<std::size_t>(m * pairs)),
      b(static_cast<std::size_t>(pairs * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0x3F803F80u + static_cast<std::uint32_t>(i % 7);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0x3F803F80u + static_cast<std::uint32_t>(i % 5);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (auto _ : state) {
    k::bf16_pair_product(m, n, pairs, {a.data(), pairs, 1}, {b.data(), n}, c.data(), n, false);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * m * n * pairs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One depth block of pair panels straight from bfloat16 storage, as the AMX GEMM packs them
// (kc 512, 32 lines a panel) from a 2048 x 1536 operand: the panels of one 1,024-line block,
// on the active path (`twin`: the scalar twin). GB/s counts the bytes read and written.
void BM_pair_panels(benchmark::State& state, bool a_side, bool trans, bool rows_layout, bool twin) {
  namespace g = k::gemm_detail;
  constexpr std::int64_t kLines = 1024, kDepth = 512, kWidth = 32, kLd = 1536;
  const std::vector<std::uint8_t> x = values(2048 * kLd, Format::bfloat16, 3);
  const g::MatrixRef ref{{x.data(), Format::bfloat16}, trans, kLd};
  std::vector<std::uint32_t> dst(static_cast<std::size_t>(kWidth * kDepth / 2));
  for (auto _ : state) {
    for (std::int64_t l0 = 0; l0 < kLines; l0 += kWidth) {
      if (twin) {
        g::pair_panel_bf16_ref(ref, a_side, l0, kWidth, 0, kDepth, g::Part::whole, kWidth,
                               kDepth / 2, rows_layout, dst.data());
      } else {
        g::pair_panel_bf16(ref, a_side, l0, kWidth, 0, kDepth, g::Part::whole, kWidth, kDepth / 2,
                           rows_layout, dst.data());
      }
      benchmark::DoNotOptimize(dst.data());
    }
  }
  state.counters["GB/s"] = benchmark::Counter(kLines * kDepth * 2.0 * 2 * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

template <class... Args>
void add(const std::string& name, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

void register_all() {
  struct S {
    std::int64_t m, n, k;
    const char* form;
  };
  const bool dot = k::route_unavailable(GemmRoute::bf16, Format::bfloat16).empty();
  const bool tiles = k::route_unavailable(GemmRoute::amx, Format::bfloat16).empty();
  const bool native = k::route_unavailable(GemmRoute::onednn_bf16, Format::bfloat16).empty();
  // 2048^3, then qkv projection, MLP up, MLP down (forward), their dX and dW (rows = batch 8
  // x context 256); then the Fashion MLP's first layer (batch 128, 784 -> 512): forward, dX
  // and dW, small products where a format's conversions weigh more.
  for (const S& s : {S{2048, 2048, 2048, "NN"}, S{2048, 1152, 384, "NT"}, S{2048, 1536, 384, "NT"},
                     S{2048, 384, 1536, "NT"}, S{2048, 384, 1536, "NN"}, S{1536, 384, 2048, "TN"},
                     S{384, 1536, 2048, "TN"}, S{128, 512, 784, "NT"}, S{128, 784, 512, "NN"},
                     S{512, 784, 128, "TN"}}) {
    const GemmShape g = layout(s.m, s.n, s.k, s.form);
    const std::string shape =
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "/" + s.form;
    add("onednn_fp32/" + shape, BM_onednn, g);
    add("fp32_route/float32/" + shape, BM_ours, g, Format::float32, 1, GemmRoute::fp32);
    for (Format f : {Format::bfloat16, Format::float16, Format::cbfloat16, Format::float8_e4m3}) {
      add("fp32_route/" + std::string(mantissa::numerics::name(f)) + "/" + shape, BM_ours, g, f, 1,
          GemmRoute::fp32);
    }
    add("onednn_fp32_route/bfloat16/" + shape, BM_ours, g, Format::bfloat16, 1,
        GemmRoute::onednn_fp32);
    if (dot) {
      for (Format f : {Format::bfloat16, Format::float8_e4m3}) {
        add("bf16_route/" + std::string(mantissa::numerics::name(f)) + "/" + shape, BM_ours, g, f,
            1, GemmRoute::bf16);
      }
      add("bf16_route/float16_pol2/" + shape, BM_ours, g, Format::float16, 2, GemmRoute::bf16);
      add("bf16_route/float16_pol1/" + shape, BM_ours, g, Format::float16, 1, GemmRoute::bf16);
    }
    if (tiles) {
      add("amx_route/bfloat16/" + shape, BM_ours, g, Format::bfloat16, 1, GemmRoute::amx);
      add("amx_route/float16_pol1/" + shape, BM_ours, g, Format::float16, 1, GemmRoute::amx);
      add("amx_route/float16_pol2/" + shape, BM_ours, g, Format::float16, 2, GemmRoute::amx);
    }
    if (native) {
      add("onednn_bf16/bfloat16/" + shape, BM_ours, g, Format::bfloat16, 1, GemmRoute::onednn_bf16);
      add("onednn_bf16/float16_pol1/" + shape, BM_ours, g, Format::float16, 1,
          GemmRoute::onednn_bf16);
      add("onednn_bf16/float16_pol2/" + shape, BM_ours, g, Format::float16, 2,
          GemmRoute::onednn_bf16);
      add("onednn_bf16/float8_e4m3/" + shape, BM_ours, g, Format::float8_e4m3, 1,
          GemmRoute::onednn_bf16);
    }
  }
  for (const bool twin : {false, true}) {
    // The layouts of the model's products: A as stored and transposed on AMX's rows, B as
    // stored and transposed by pair (AMX's B, and both operands of the AVX512-BF16 kernel).
    const std::string path = twin ? "_ref" : "";
    add("pair_panels" + path + "/a_rows", BM_pair_panels, true, false, true, twin);
    add("pair_panels" + path + "/a_transposed_rows", BM_pair_panels, true, true, true, twin);
    add("pair_panels" + path + "/b_pairs", BM_pair_panels, false, false, false, twin);
    add("pair_panels" + path + "/b_transposed_pairs", BM_pair_panels, false, true, false, twin);
    add("pair_panels" + path + "/a_pairs", BM_pair_panels, true, false, false, twin);
  }
  if (k::bf16_pairs_available()) {
    add("bf16_pair_product/64x256x32", BM_pair_product, 64, 256, 32);
    add("bf16_pair_product/64x64x128", BM_pair_product, 64, 64, 128);
  }
  for (bool backward : {false, true}) {
    const std::string what = backward ? "attention/forward_backward/" : "attention/forward/";
    add(what + "float32/b8h6t256d64", BM_attention, backward, Format::float32,
        GemmRoute::automatic);
    add(what + "float32/gpt_ref_layout", BM_attention_model, backward, Format::float32,
        GemmRoute::automatic);
    for (GemmRoute r : {GemmRoute::automatic, GemmRoute::onednn_fp32, GemmRoute::bf16,
                        GemmRoute::onednn_bf16, GemmRoute::amx}) {
      if (!k::route_unavailable(r, Format::bfloat16).empty() && r != GemmRoute::automatic) continue;
      add(what + "bfloat16_" + std::string(k::route_name(r)) + "/b8h6t256d64", BM_attention,
          backward, Format::bfloat16, r);
      add(what + "bfloat16_" + std::string(k::route_name(r)) + "/gpt_ref_layout",
          BM_attention_model, backward, Format::bfloat16, r);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_features",
                              mantissa::numerics::describe(mantissa::numerics::cpu_features()));
  benchmark::AddCustomContext("fp32_route_isa",
                              std::string(k::gemm_isa_name(k::active_gemm_isa())));
  benchmark::AddCustomContext("cpu", k::cpu_identity());
  benchmark::AddCustomContext(
      "onednn_bf16", k::native_bf16().available ? k::native_bf16().isa : std::string("none"));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
