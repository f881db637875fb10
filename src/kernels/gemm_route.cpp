#include "mantissa/kernels/gemm_route.hpp"

#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "conv/onednn_conv.hpp"
#include "gemm/onednn_routes.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/amx_pairs.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::kernels {
namespace {

std::atomic<int> g_isa_override{-1};

bool bf16_values(Format f) {
  return f != Format::float32;  // every H and fp8 format is bf16 values in its passes
}

std::string cpuid_identity() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  std::string brand;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
    for (unsigned leaf = 0x80000002u; leaf <= 0x80000004u; ++leaf) {
      __get_cpuid(leaf, &a, &b, &c, &d);
      char part[17] = {};
      std::memcpy(part, &a, 4);
      std::memcpy(part + 4, &b, 4);
      std::memcpy(part + 8, &c, 4);
      std::memcpy(part + 12, &d, 4);
      brand += part;
    }
  }
  while (!brand.empty() && brand.back() == ' ') brand.pop_back();
  while (!brand.empty() && brand.front() == ' ') brand.erase(brand.begin());
  if (brand.empty()) brand = "unknown CPU";
  unsigned family = 0, model = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    family = (a >> 8) & 0xfu;
    model = (a >> 4) & 0xfu;
    if (family == 0xfu) family += (a >> 20) & 0xffu;
    if (family == 0x6u || family >= 0xfu) model += ((a >> 16) & 0xfu) << 4;
  }
  return brand + " (family " + std::to_string(family) + " model " + std::to_string(model) + ")";
}

}  // namespace

std::string_view gemm_isa_name(GemmIsa isa) {
  return name_of(kGemmIsaNames, isa);
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

const std::string& cpu_identity() {
  static const std::string id = cpuid_identity();
  return id;
}

std::string route_unavailable(MatmulRoute route, Format format) {
  switch (route) {
    case MatmulRoute::automatic:
      return "automatic is not a route of its own";
    case MatmulRoute::fp32:
    case MatmulRoute::onednn_fp32:
      return "";
    case MatmulRoute::bf16:
    case MatmulRoute::onednn_bf16:
    case MatmulRoute::amx:
      break;
  }
  if (!bf16_values(format)) {
    return "float32 values are not bfloat16 values (bf16 routes need a half or fp8 format)";
  }
  if (route == MatmulRoute::bf16 && !numerics::cpu_features().avx512_bf16) {
    return "this CPU has no AVX512-BF16 (it has: " + numerics::describe(numerics::cpu_features()) +
           ")";
  }
  if (route == MatmulRoute::amx && !amx_available()) return amx_unavailable();
  if (route == MatmulRoute::onednn_bf16 && !native_bf16().available) {
    return "oneDNN offers no bf16 matmul on this CPU (it has: " +
           numerics::describe(numerics::cpu_features()) + ")";
  }
  return "";
}

std::string route_unavailable(MatmulRoute route, const GemmKey& key) {
  std::string why = route_unavailable(route, key.format);
  if (!why.empty() || key.kind == ProductKind::matmul || route != MatmulRoute::onednn_bf16) {
    return why;
  }
  if (key.passes != 1) {
    return "oneDNN's bf16 convolutions take one bf16 pass, " +
           std::string(numerics::name(key.format)) + " values need " + std::to_string(key.passes) +
           " (the bf16 route makes them)";
  }
  if (!conv_detail::onednn_bf16_conv_available()) {
    return "oneDNN offers no bf16 convolution on this CPU (it has: " +
           numerics::describe(numerics::cpu_features()) + ")";
  }
  return "";
}

std::vector<MatmulRoute> routes_for(const GemmKey& key) {
  std::vector<MatmulRoute> out;
  for (const auto& named : precision::kMatmulRouteNames) {
    if (named.value == MatmulRoute::automatic) continue;
    if (route_unavailable(named.value, key).empty()) out.push_back(named.value);
  }
  return out;
}

std::vector<MatmulRoute> routes_for(Format format) {
  return routes_for(GemmKey{.format = format});
}

GemmKey conv_key(ProductKind kind, const ConvKey& c, Format format, int passes, bool all_threads) {
  const auto shape = [&] {
    return std::string(name_of(kProductKindNames, kind)) + ", batch " + std::to_string(c.batch) +
           ", channels " + std::to_string(c.channels) + ", " + std::to_string(c.height) + "x" +
           std::to_string(c.width) + ", kernel " + std::to_string(c.kernel_h) + "x" +
           std::to_string(c.kernel_w) + ", stride " + std::to_string(c.stride) + ", padding " +
           std::to_string(c.padding);
  };
  // The sizes' sums and products, checked: a shape whose counts pass 2^63 - 1 (no memory holds
  // it; a forged route cache line's numbers) once overflowed them.
  std::int64_t pad2 = 0, padded_h = 0, padded_w = 0;
  const bool padding_fits = !__builtin_mul_overflow(c.padding, 2, &pad2) &&
                            !__builtin_add_overflow(c.height, pad2, &padded_h) &&
                            !__builtin_add_overflow(c.width, pad2, &padded_w);
  if (kind == ProductKind::matmul || c.batch < 1 || c.channels < 1 || c.height < 1 || c.width < 1 ||
      c.out_channels < 1 || c.kernel_h < 1 || c.kernel_w < 1 || c.stride < 1 || c.padding < 0 ||
      !padding_fits || padded_h < c.kernel_h || padded_w < c.kernel_w) {
    throw Error("conv_key: not a convolution's product (" + shape() + ")");
  }
  const std::int64_t out_h = (padded_h - c.kernel_h) / c.stride + 1;
  const std::int64_t out_w = (padded_w - c.kernel_w) / c.stride + 1;
  std::int64_t wide = 0, patch = 0;
  if (__builtin_mul_overflow(c.batch, out_h, &wide) || __builtin_mul_overflow(wide, out_w, &wide) ||
      __builtin_mul_overflow(c.channels, c.kernel_h, &patch) ||
      __builtin_mul_overflow(patch, c.kernel_w, &patch)) {
    throw Error("conv_key: a convolution's product of more than 2^63 - 1 columns or rows (" +
                shape() + ")");
  }
  GemmKey key;
  switch (kind) {
    case ProductKind::conv_forward:  // W [o, patch] cols [patch, wide]
      key.m = c.out_channels, key.n = wide, key.k = patch;
      break;
    case ProductKind::conv_backward_data:  // W^T [patch, o] G [o, wide]
      key.m = patch, key.n = wide, key.k = c.out_channels, key.trans_a = true;
      break;
    case ProductKind::conv_backward_weights:  // G [o, wide] cols^T [wide, patch]
    case ProductKind::matmul:
      key.m = c.out_channels, key.n = patch, key.k = wide, key.trans_b = true;
      break;
  }
  key.format = format;
  key.passes = passes;
  key.all_threads = all_threads;
  key.kind = kind;
  key.conv = c;
  return key;
}

std::string product_prefix(const GemmKey& key) {
  if (key.kind == ProductKind::matmul) return "";
  const ConvKey& c = key.conv;
  std::string s(name_of(kProductKindNames, key.kind));
  for (std::int64_t v : {c.batch, c.channels, c.height, c.width, c.out_channels, c.kernel_h,
                         c.kernel_w, c.stride, c.padding}) {
    s += ' ' + std::to_string(v);
  }
  return s + (c.bias ? " bias" : " nobias");
}

MatmulRoute effective_preference(Format format, MatmulRoute preference) {
  return on_bf16_units(preference) && !bf16_values(format) ? MatmulRoute::automatic : preference;
}

bool takes_fp32_routes(Format half, MatmulRoute preference) {
  preference = effective_preference(half, preference);
  if (preference != MatmulRoute::automatic) return precision::is_fp32_route(preference);
  const std::vector<MatmulRoute> routes = routes_for(half);
  return std::all_of(routes.begin(), routes.end(), precision::is_fp32_route);
}

bool took_fp32_routes(Format half, const std::vector<RouteRecord>& records) {
  bool any = false;
  for (const RouteRecord& r : records) {
    if (r.key.format != half) continue;
    if (!precision::is_fp32_route(r.route)) return false;
    any = true;
  }
  return any;
}

void check_route(Format format, MatmulRoute preference, std::string_view key) {
  preference = effective_preference(format, preference);
  if (preference == MatmulRoute::automatic) return;
  const std::string why = route_unavailable(preference, format);
  if (!why.empty()) {
    throw Error(std::string(key) + ": " + std::string(route_name(preference)) +
                " cannot multiply " + std::string(numerics::name(format)) + " values here: " + why +
                "; use automatic or one of the routes this CPU has");
  }
}

std::string describe(const GemmKey& key) {
  if (key.attention_head) {
    return "attention head t" + std::to_string(key.m) + " d" + std::to_string(key.k) + " " +
           std::string(numerics::name(key.format)) + " " + std::to_string(key.passes) +
           (key.passes == 1 ? " pass" : " passes");
  }
  std::string s;
  if (key.kind == ProductKind::matmul) {
    s = std::to_string(key.m) + 'x' + std::to_string(key.n) + 'x' + std::to_string(key.k) + ' ' +
        (key.trans_a ? 'T' : 'N') + (key.trans_b ? 'T' : 'N');
  } else {
    const ConvKey& c = key.conv;
    s = std::string(name_of(kProductKindNames, key.kind)) + ' ' + std::to_string(c.batch) + 'x' +
        std::to_string(c.channels) + 'x' + std::to_string(c.height) + 'x' +
        std::to_string(c.width) + " o" + std::to_string(c.out_channels) + " k" +
        std::to_string(c.kernel_h) + 'x' + std::to_string(c.kernel_w) + " s" +
        std::to_string(c.stride) + " p" + std::to_string(c.padding) + (c.bias ? " +bias" : "");
  }
  s += ' ';
  s += numerics::name(key.format);
  s += ' ';
  s += std::to_string(key.passes);
  s += key.passes == 1 ? " pass" : " passes";
  s += key.all_threads ? ", all threads" : ", in thread";
  return s;
}

std::string describe_concrete_route(MatmulRoute route) {
  switch (route) {
    case MatmulRoute::fp32:
      return "fp32 (mantissa GEMM, fp32 FMA, " + std::string(gemm_isa_name(active_gemm_isa())) +
             ")";
    case MatmulRoute::onednn_fp32:
      return "onednn_fp32 (oneDNN fp32 matmul)";
    case MatmulRoute::bf16:
      return "bf16 (mantissa GEMM, AVX512-BF16 dot products)";
    case MatmulRoute::onednn_bf16:
      return "onednn_bf16 (oneDNN bf16 matmul, " +
             (native_bf16().available ? native_bf16().isa : std::string("none here")) + ")";
    case MatmulRoute::amx:
      return "amx (mantissa GEMM and attention heads, AMX tiles)";
    case MatmulRoute::automatic:
      break;
  }
  return "automatic";
}

std::string route_table_text(const std::vector<RouteRecord>& records) {
  const RouteCacheStatus cache = route_cache_status();
  std::string out = "matrix-product routes on " + cpu_identity() +
                    " (route cache: " + (cache.path.empty() ? "none" : cache.path) +
                    (cache.note.empty() ? "" : "; " + cache.note) + ")\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-72s %-12s %-9s", "product", "route", "chosen");
  out += line;
  for (const auto& named : precision::kMatmulRouteNames) {
    if (named.value == MatmulRoute::automatic) continue;
    std::snprintf(line, sizeof line, " %12s", std::string(named.name).c_str());
    out += line;
  }
  out += "  (GFLOP/s)\n";
  for (const RouteRecord& r : records) {
    std::snprintf(line, sizeof line, "  %-72s %-12s %-9s", describe(r.key).c_str(),
                  std::string(route_name(r.route)).c_str(),
                  std::string(name_of(kRouteSourceNames, r.source)).c_str());
    out += line;
    for (const auto& named : precision::kMatmulRouteNames) {
      if (named.value == MatmulRoute::automatic) continue;
      const double g = r.gflops[static_cast<std::size_t>(named.value)];
      if (g > 0) {
        std::snprintf(line, sizeof line, " %12.1f", g);
      } else {
        std::snprintf(line, sizeof line, " %12s", "-");
      }
      out += line;
    }
    out += "\n";
  }
  return out;
}

std::string describe_route(Format half, int opt_level, MatmulRoute preference) {
  std::string s(numerics::name(half));
  s += ": ";
  const bool split = half == Format::float16 || half == Format::cbfloat16;
  const int passes = precision::matmul_passes(half, opt_level);
  preference = effective_preference(half, preference);
  if (preference == MatmulRoute::automatic) {
    std::string names;
    for (MatmulRoute r : routes_for(half))
      names += (names.empty() ? "" : ", ") + std::string(route_name(r));
    s += "automatic (the fastest of " + names + ", measured per product shape on first use)";
  } else {
    check_route(half, preference);
    s += describe_concrete_route(preference);
  }
  if (split) {
    s += passes == 1 ? "; inputs rounded to bfloat16 (POL 2)"
                     : "; exact products: 1 pass on fp32 routes, " + std::to_string(passes) +
                           " bf16 passes (exact hi/lo split) on bf16 routes";
  }
  return s;
}

}  // namespace mantissa::kernels
