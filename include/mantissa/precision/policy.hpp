#pragma once
// The precision Policy: the half format H and precision_opt_level (POL), read by every op,
// set for a scope by the Autocast guard (DESIGN.md section 3).
#include <cstdint>
#include <string>
#include <string_view>

#include "mantissa/numerics/format.hpp"

namespace mantissa::precision {

using numerics::Format;

// Which hardware runs matrix products (kernels/gemm_route.hpp resolves it on this CPU).
enum class MatmulRoute : std::uint8_t {
  automatic,    // bf16 matrix units (AMX) where this CPU has them, else fp32 FMA
  fp32,         // mantissa's fp32 FMA GEMM
  native_bf16,  // oneDNN's bf16 matmul (AMX or AVX512-BF16); an error where there is none
};
std::string_view route_name(MatmulRoute route);  // automatic | fp32 | native_bf16
// Parses a route name; throws mantissa::Error naming `what` and the allowed names.
MatmulRoute parse_route(std::string_view name, std::string_view what);

struct Policy {
  Format half = Format::float32;  // float32: mixed precision disabled
  int opt_level = 1;              // precision_opt_level: 0, 1 or 2
  MatmulRoute matmul_route = MatmulRoute::automatic;

  bool enabled() const { return half != Format::float32; }
  // Throws mantissa::Error naming fp16_type / precision_opt_level and the allowed values.
  void validate() const;
  std::string describe() const;  // "cbfloat16, POL 1"
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
// H at this POL (DESIGN.md section 3): float16/cbfloat16 4 at POL 0, 3 at POL 1, 1 at POL 2
// (inputs rounded to bfloat16); bfloat16 and fp8 always 1; float32 1 (plain fp32 GEMM).
int matmul_passes(Format h, int opt_level);

// Attention softmax in H (instead of float32): POL 2 for any H, and POL 1 for cbfloat16.
bool attention_softmax_in_half(const Policy& p = current_policy());

}  // namespace mantissa::precision
