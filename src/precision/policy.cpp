#include "mantissa/precision/policy.hpp"

#include "mantissa/error.hpp"

namespace mantissa::precision {
namespace {
thread_local Policy t_policy;
constexpr std::string_view kRouteNames[] = {"automatic", "fp32", "native_bf16"};
}  // namespace

std::string_view route_name(MatmulRoute route) {
  return kRouteNames[static_cast<int>(route)];
}

MatmulRoute parse_route(std::string_view name, std::string_view what) {
  for (int i = 0; i < 3; ++i) {
    if (name == kRouteNames[i]) return static_cast<MatmulRoute>(i);
  }
  throw Error(std::string(what) + ": '" + std::string(name) +
              "' (expected one of: automatic, fp32, native_bf16)");
}

void Policy::validate() const {
  if (half != Format::float32 && half != Format::float16 && half != Format::bfloat16 &&
      half != Format::cbfloat16) {
    throw Error("fp16_type: '" + std::string(numerics::name(half)) +
                "' is not a half format (expected one of: float16, bfloat16, cbfloat16)");
  }
  if (opt_level < 0 || opt_level > 2) {
    throw Error("precision_opt_level: " + std::to_string(opt_level) +
                " is out of range (expected one of: 0, 1, 2)");
  }
}

std::string Policy::describe() const {
  if (!enabled()) return "float32 (mixed precision off)";
  std::string s = std::string(numerics::name(half)) + ", POL " + std::to_string(opt_level);
  if (matmul_route != MatmulRoute::automatic)
    s += ", route " + std::string(route_name(matmul_route));
  return s;
}

const Policy& current_policy() {
  return t_policy;
}

Autocast::Autocast(const Policy& policy) : previous_(t_policy) {
  policy.validate();
  t_policy = policy;
}

Autocast::~Autocast() {
  t_policy = previous_;
}

int matmul_passes(Format h, int opt_level) {
  if (h == Format::float16 || h == Format::cbfloat16) {
    return opt_level == 0 ? 4 : (opt_level == 1 ? 3 : 1);
  }
  return 1;
}

bool attention_softmax_in_half(const Policy& p) {
  if (!p.enabled()) return false;
  return p.opt_level == 2 || (p.opt_level == 1 && p.half == Format::cbfloat16);
}

}  // namespace mantissa::precision
