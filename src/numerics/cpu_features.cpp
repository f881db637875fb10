#include "mantissa/numerics/cpu_features.hpp"

#include <cpuid.h>

#include <atomic>

#include "mantissa/error.hpp"

namespace mantissa::numerics {
namespace {

bool bit(unsigned reg, int b) {
  return ((reg >> b) & 1u) != 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = bit(c, 27);
  const bool fma = bit(c, 12);
  const bool f16c = bit(c, 29);
  const bool avx = bit(c, 28);
  if (!osxsave || !avx) return f;
  // XCR0: the OS saves YMM state (bits 1,2) and ZMM state (bits 5,6,7).
  unsigned xlo = 0, xhi = 0;
  __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  const bool ymm_os = (xlo & 0x6u) == 0x6u;
  const bool zmm_os = (xlo & 0xe6u) == 0xe6u;
  if (!ymm_os) return f;
  f.fma = fma;
  f.f16c = f16c;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) {
    f.avx2 = bit(b, 5);
    f.avx512f = zmm_os && bit(b, 16);
    f.avx512bw = zmm_os && bit(b, 30);
    f.avx512_fp16 = zmm_os && bit(d, 23);
    f.amx_bf16 = bit(d, 22);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d) != 0) {
    f.avx512_bf16 = zmm_os && bit(a, 5);
  }
  return f;
}

std::atomic<int> g_override{-1};

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string describe(const CpuFeatures& f) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.avx512_fp16, "avx512_fp16");
  add(f.amx_bf16, "amx_bf16");
  return s.empty() ? "none" : s;
}

std::string_view simd_path_name(SimdPath p) {
  switch (p) {
    case SimdPath::scalar:
      return "scalar";
    case SimdPath::avx2:
      return "avx2";
    case SimdPath::avx512:
      return "avx512";
  }
  return "?";
}

bool cpu_supports(SimdPath p) {
  const CpuFeatures& f = cpu_features();
  switch (p) {
    case SimdPath::scalar:
      return true;
    case SimdPath::avx2:
      return f.avx2 && f.f16c && f.fma;
    case SimdPath::avx512:
      return f.avx2 && f.f16c && f.fma && f.avx512f && f.avx512bw;
  }
  return false;
}

SimdPath best_simd_path() {
  // Asked for by every bulk conversion, some of them a row long: found once.
  static const SimdPath best = cpu_supports(SimdPath::avx512) ? SimdPath::avx512
                               : cpu_supports(SimdPath::avx2) ? SimdPath::avx2
                                                              : SimdPath::scalar;
  return best;
}

SimdPath active_simd_path() {
  const int o = g_override.load(std::memory_order_relaxed);
  return o < 0 ? best_simd_path() : static_cast<SimdPath>(o);
}

void set_simd_path(SimdPath p) {
  if (!cpu_supports(p)) {
    throw Error("set_simd_path: this CPU cannot run the '" + std::string(simd_path_name(p)) +
                "' path (it has: " + describe(cpu_features()) + ")");
  }
  g_override.store(static_cast<int>(p), std::memory_order_relaxed);
}

}  // namespace mantissa::numerics
