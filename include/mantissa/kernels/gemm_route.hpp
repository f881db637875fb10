#pragma once
// Which hardware runs mantissa's matrix products on this CPU, and why (DESIGN.md section 3,
// docs/engine.md "GEMM routes"). Printed by `mantissa formats`, `mantissa bench train` and
// its profile, so that nothing falls back silently.
#include <cstdint>
#include <string>
#include <string_view>

#include "mantissa/kernels/gemm.hpp"

namespace mantissa::kernels {

// The instruction set of the fp32 FMA route's micro-kernels.
enum class GemmIsa : std::uint8_t {
  scalar,  // std::fma loops: the twin every other ISA matches bit for bit
  avx2,    // AVX2 + FMA, 6 x 16 blocks
  avx512,  // AVX-512F, 12 x 32 blocks
};
std::string_view gemm_isa_name(GemmIsa isa);
bool cpu_supports(GemmIsa isa);
GemmIsa best_gemm_isa();
// The ISA the fp32 route uses now: best_gemm_isa() unless set_gemm_isa chose another.
GemmIsa active_gemm_isa();
// For tests and benchmarks; throws mantissa::Error if this CPU cannot run `isa`.
void set_gemm_isa(GemmIsa isa);

// What oneDNN offers for bf16 products on this CPU, asked once.
struct NativeBf16 {
  bool available = false;     // oneDNN creates a bf16 matmul here (AVX512-BF16 or AMX)
  bool matrix_units = false;  // ... on AMX tiles
  std::string isa;            // oneDNN's implementation name, e.g. "brg:avx512_core_amx"
};
const NativeBf16& native_bf16();

using precision::route_name;

// The route a product of H values takes under `preference`: fp32 or native_bf16 (never
// automatic). automatic picks native_bf16 only where oneDNN runs it on matrix units (AMX):
// on CPUs whose bf16 support is the AVX512-BF16 dot instruction alone, oneDNN's bf16 matmul
// was measured at about half the fp32 FMA rate (docs/PERFORMANCE.md), so fp32 FMA stays.
// float32 always takes fp32. Throws mantissa::Error when native_bf16 is asked for where
// oneDNN has no bf16 matmul.
GemmRoute resolve_route(Format half, GemmRoute preference);

// One line: "bfloat16: oneDNN bf16 matmul (brg:avx512_core_amx), 1 pass" or
// "float16: fp32 FMA (avx512), exact products in 1 pass; bf16 units: none".
std::string describe_route(Format half, int opt_level, GemmRoute preference);

}  // namespace mantissa::kernels
