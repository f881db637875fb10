#include "mantissa/kernels/gemm_route.hpp"

#include <atomic>
#include <string>

#include "gemm/onednn_routes.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::kernels {
namespace {

std::atomic<int> g_isa_override{-1};

}  // namespace

std::string_view gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::scalar:
      return "scalar";
    case GemmIsa::avx2:
      return "avx2";
    case GemmIsa::avx512:
      return "avx512";
  }
  return "?";
}

bool cpu_supports(GemmIsa isa) {
  const numerics::CpuFeatures& f = numerics::cpu_features();
  switch (isa) {
    case GemmIsa::scalar:
      return true;
    case GemmIsa::avx2:
      return f.avx2 && f.fma;
    case GemmIsa::avx512:
      return f.avx512f;
  }
  return false;
}

GemmIsa best_gemm_isa() {
  if (cpu_supports(GemmIsa::avx512)) return GemmIsa::avx512;
  if (cpu_supports(GemmIsa::avx2)) return GemmIsa::avx2;
  return GemmIsa::scalar;
}

GemmIsa active_gemm_isa() {
  const int o = g_isa_override.load(std::memory_order_relaxed);
  return o < 0 ? best_gemm_isa() : static_cast<GemmIsa>(o);
}

void set_gemm_isa(GemmIsa isa) {
  if (!cpu_supports(isa)) {
    throw Error("set_gemm_isa: this CPU cannot run the '" + std::string(gemm_isa_name(isa)) +
                "' GEMM (it has: " + numerics::describe(numerics::cpu_features()) + ")");
  }
  g_isa_override.store(static_cast<int>(isa), std::memory_order_relaxed);
}

const NativeBf16& native_bf16() {
  static const NativeBf16 info = gemm_detail::probe_native_bf16();
  return info;
}

GemmRoute resolve_route(Format half, GemmRoute preference) {
  if (half == Format::float32 || preference == GemmRoute::fp32) return GemmRoute::fp32;
  const NativeBf16& native = native_bf16();
  if (preference == GemmRoute::native_bf16) {
    if (!native.available) {
      throw Error("gemm route native_bf16: oneDNN offers no bf16 matmul on this CPU (it has: " +
                  numerics::describe(numerics::cpu_features()) +
                  "; bf16 products need AVX512-BF16 or AMX-BF16); use route fp32 or automatic");
    }
    return GemmRoute::native_bf16;
  }
  return native.matrix_units ? GemmRoute::native_bf16 : GemmRoute::fp32;
}

std::string describe_route(Format half, int opt_level, GemmRoute preference) {
  const GemmRoute route = resolve_route(half, preference);
  const int passes = precision::matmul_passes(half, opt_level);
  const NativeBf16& native = native_bf16();
  std::string s(numerics::name(half));
  s += ": ";
  const bool split = half == Format::float16 || half == Format::cbfloat16;
  if (route == GemmRoute::native_bf16) {
    s += "oneDNN bf16 matmul (" + native.isa + "), ";
    s += split ? std::to_string(passes) + (passes == 1 ? " pass (inputs rounded to bfloat16)"
                                                       : " bf16 passes (exact hi/lo split)")
               : std::string("1 pass");
    return s;
  }
  s += "fp32 FMA (mantissa GEMM, " + std::string(gemm_isa_name(active_gemm_isa())) + ")";
  if (split) {
    s += passes == 1 ? ", inputs rounded to bfloat16 (POL 2)" : ", exact products in 1 pass";
  }
  if (half == Format::float32) return s;
  if (!native.available) {
    s += "; bf16 units: none";
  } else if (preference == GemmRoute::fp32) {
    s += "; bf16 units (" + native.isa + ") not used: route fp32 asked for";
  } else {
    s += "; bf16 units (" + native.isa +
         ") not used: no AMX, bf16 dot products are slower than fp32 FMA here (route "
         "native_bf16 forces them)";
  }
  return s;
}

}  // namespace mantissa::kernels
