#pragma once
// The precision Policy: the half format H and precision_opt_level (POL), read by every op,
// set for a scope by the Autocast guard (docs/design.md section 3).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/fp8.hpp"

namespace mantissa::precision {

using numerics::Format;

// Which code and hardware run matrix products (kernels/gemm_route.hpp resolves it on this
// CPU). Every route computes exact products of the H values with float32 sums; they differ in
// the order of the sums (and the bf16 routes in splitting float16 / cbfloat16 into passes).
enum class MatmulRoute : std::uint8_t {
  automatic,    // the fastest route for each product shape, measured on first use
  fp32,         // mantissa's blocked GEMM on fp32 FMA units
  onednn_fp32,  // oneDNN's fp32 matmul
  bf16,         // mantissa's blocked GEMM on the AVX512-BF16 dot instruction
  onednn_bf16,  // oneDNN's bf16 matmul (AMX or AVX512-BF16)
  amx,          // mantissa's blocked GEMM and fused attention heads on AMX tiles
};
inline constexpr std::size_t kMatmulRouteCount = 6;
inline constexpr NameTable<MatmulRoute, kMatmulRouteCount> kMatmulRouteNames = {{
    {"automatic", MatmulRoute::automatic},
    {"fp32", MatmulRoute::fp32},
    {"onednn_fp32", MatmulRoute::onednn_fp32},
    {"bf16", MatmulRoute::bf16},
    {"onednn_bf16", MatmulRoute::onednn_bf16},
    {"amx", MatmulRoute::amx},
}};
static_assert(in_enum_order(kMatmulRouteNames, kMatmulRouteCount));
static_assert(static_cast<std::size_t>(MatmulRoute::amx) + 1 == kMatmulRouteCount);
inline constexpr std::string_view route_name(MatmulRoute route) {
  return name_of(kMatmulRouteNames, route);
}

// The formats a Policy computes in (fp16_type's values).
inline constexpr std::array<Format, 3> kHalfFormats = {Format::float16, Format::bfloat16,
                                                       Format::cbfloat16};
constexpr bool is_half_format(Format f) {
  for (Format h : kHalfFormats) {
    if (h == f) return true;
  }
  return false;
}
// The one message for a bad fp16_type, wherever it is caught:
// "fp16_type: '<given>' (expected one of: float16, bfloat16, cbfloat16)".
std::string fp16_type_error(std::string_view given);

struct Policy {
  Format half = Format::float32;  // float32: mixed precision disabled
  int opt_level = 1;              // precision_opt_level: 0, 1 or 2
  MatmulRoute matmul_route = MatmulRoute::automatic;
  // fp8.enabled: the linear layers run the recipe of their attached state (recipe.hpp's
  // LinearQuant; nn::Linear::quant), of any recipe; off, they run in H. The other fields are
  // delayed scaling's settings (fp8.hpp) for ops given an Fp8Meta directly.
  Fp8Settings fp8;

  Policy() = default;
  Policy(Format half_format, int precision_opt_level = 1,
         MatmulRoute route = MatmulRoute::automatic, Fp8Settings fp8_settings = {})
      : half(half_format), opt_level(precision_opt_level), matmul_route(route), fp8(fp8_settings) {}

  bool enabled() const { return half != Format::float32; }
  // Throws mantissa::Error naming fp16_type / precision_opt_level and the allowed values:
  // `half` must be float32 (off) or a half format, opt_level 0, 1 or 2.
  void validate() const;
  std::string describe() const;  // "cbfloat16, POL 1" (", quantized linear layers")
};

// The policy in force on this thread (float32 unless an Autocast is alive).
const Policy& current_policy();

// Sets the policy for its lifetime and restores the previous one after.
class Autocast {
 public:
  explicit Autocast(const Policy& policy);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  Policy previous_;
};

// --- Per-op-class rules -------------------------------------------------------------

// The format activations (and activation gradients) are stored in between ops: H, or
// float32 when disabled.
inline Format activation_format(const Policy& p = current_policy()) {
  return p.half;
}

// Matmul-class ops: how many bf16 passes the exact decomposition uses for inputs of format
// H at this POL (docs/design.md section 3): float16/cbfloat16 4 at POL 0, 3 at POL 1, 1 at POL 2
// (inputs rounded to bfloat16); bfloat16 and fp8 always 1; float32 1 (plain fp32 GEMM).
int matmul_passes(Format h, int opt_level);

// Attention softmax in H (instead of float32): POL 2 for any H, and POL 1 for cbfloat16.
bool attention_softmax_in_half(const Policy& p = current_policy());

// Whether a route multiplies in float32 (fp32, onednn_fp32): float16 / cbfloat16 values are
// multiplied exactly in one pass there, whatever the pass count (an 11-bit by 11-bit
// product fits float32's 24 bits), so 3 and 4 passes compute the same bits.
constexpr bool is_fp32_route(MatmulRoute route) {
  return route == MatmulRoute::fp32 || route == MatmulRoute::onednn_fp32;
}

// The precision_opt_level values other than p's that compute the same bits as p on the same
// routes (docs/engine.md "Matrix products: routes and precision_opt_level"). POL decides two
// things: the bf16 passes of a float16 / cbfloat16 product (matmul_passes) and attention's
// softmax format (attention_softmax_in_half). Another level computes the same bits when the
// softmax rule is the same (or `attention` is false: the model has none) and the pass count
// is the same, or both counts are exact splits (3, 4) and `fp32_routes` says every product
// of H takes an fp32 route. Empty when mixed precision is off (POL applies to nothing).
std::vector<int> same_bits_opt_levels(const Policy& p, bool attention, bool fp32_routes);
// For a run computing in `half`: "the same bits as precision_opt_level 0 on these routes:
// <why> (docs/engine.md ...)"; "" when `levels` is empty.
std::string same_bits_note(Format half, const std::vector<int>& levels);

}  // namespace mantissa::precision
