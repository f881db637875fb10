#include "mantissa/precision/policy.hpp"

#include "mantissa/error.hpp"

namespace mantissa::precision {
namespace {
thread_local Policy t_policy;
}  // namespace

std::string fp16_type_error(std::string_view given) {
  std::string names;
  for (Format h : kHalfFormats)
    names += (names.empty() ? "" : ", ") + std::string(numerics::name(h));
  std::string out = "fp16_type: '" + std::string(given) + "' (expected one of: " + names + ")";
  // A block-scaled element or scale format: say what it is for.
  if (const std::optional<Format> f = numerics::parse_format(given)) {
    if (!numerics::is_tensor_format(*f)) out += "; " + numerics::format_use_note(*f);
  }
  return out;
}

void Policy::validate() const {
  if (half != Format::float32 && !is_half_format(half)) {
    throw Error(fp16_type_error(numerics::name(half)));
  }
  if (opt_level < 0 || opt_level > 2) {
    throw Error("precision_opt_level: " + std::to_string(opt_level) +
                " (expected one of: 0, 1, 2)");
  }
}

std::string Policy::describe() const {
  if (!enabled()) return "float32 (mixed precision off)";
  std::string s = std::string(numerics::name(half)) + ", POL " + std::to_string(opt_level);
  if (matmul_route != MatmulRoute::automatic)
    s += ", route " + std::string(route_name(matmul_route));
  // The recipe each linear layer runs is in its own state (recipe.hpp's LinearQuant).
  if (fp8.enabled) s += ", quantized linear layers";
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

std::vector<int> same_bits_opt_levels(const Policy& p, bool attention, bool fp32_routes) {
  std::vector<int> levels;
  if (!p.enabled()) return levels;
  const auto exact_split = [](int passes) { return passes == 3 || passes == 4; };
  const int passes = matmul_passes(p.half, p.opt_level);
  for (int level = 0; level <= 2; ++level) {
    if (level == p.opt_level) continue;
    Policy other = p;
    other.opt_level = level;
    const int theirs = matmul_passes(p.half, level);
    const bool products =
        theirs == passes || (fp32_routes && exact_split(passes) && exact_split(theirs));
    const bool softmax =
        !attention || attention_softmax_in_half(p) == attention_softmax_in_half(other);
    if (products && softmax) levels.push_back(level);
  }
  return levels;
}

std::string same_bits_note(Format half, const std::vector<int>& levels) {
  if (levels.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < levels.size(); ++i)
    list += (i == 0 ? "" : (i + 1 == levels.size() ? " and " : ", ")) + std::to_string(levels[i]);
  const std::string h(numerics::name(half));
  const bool split = half == Format::float16 || half == Format::cbfloat16;
  return "the same bits as precision_opt_level " + list + " on these routes: " +
         (split ? h + " products on fp32 routes are exact in one pass at POL 0 and 1"
                : h + " products take one pass at every level") +
         " (docs/engine.md \"Matrix products: routes and precision_opt_level\")";
}

}  // namespace mantissa::precision
