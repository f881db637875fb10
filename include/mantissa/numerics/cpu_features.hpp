#pragma once
// What this CPU can run, read once from CPUID, and which vector path bulk conversions use.
#include <cstdint>
#include <string>
#include <string_view>

namespace mantissa::numerics {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool amx_bf16 = false;
};

const CpuFeatures& cpu_features();
// "avx2 fma f16c" style list of what was found.
std::string describe(const CpuFeatures& f);

enum class SimdPath : std::uint8_t {
  scalar,  // the portable integer codec: same bits on every CPU
  avx2,    // AVX2 + F16C + FMA
  avx512,  // avx2, with bfloat16 encode, decode and rounding 16 lanes at a time (AVX-512F/BW)
};

std::string_view simd_path_name(SimdPath p);
bool cpu_supports(SimdPath p);
// The best path this CPU supports.
SimdPath best_simd_path();
// The path bulk conversions use now: best_simd_path() unless set_simd_path chose another.
SimdPath active_simd_path();
// Chooses the path (tests use this to exercise the scalar fallback). Throws mantissa::Error
// if this CPU cannot run it.
void set_simd_path(SimdPath p);

}  // namespace mantissa::numerics
