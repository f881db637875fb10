// trainer.init.precision: the MixedPrecision settings (docs/mixed_precision.md).
#include <cstdlib>

#include "config_internal.hpp"

namespace mantissa::config::detail {
namespace {

const char* const kNum = "a number";
const char* const kInt = "an integer";
const char* const kBool = "true or false";

// loss_scaling_factor: "dynamic" (or the TensorFlow spelling "tf_dynamic", which the vendor's
// system runs as dynamic) or a number (static scaling; its range is the scaler's rule).
amp::LossScaling parse_loss_scaling(const std::string& text, const std::string& path,
                                    std::vector<std::string>& notes) {
  if (text == "dynamic") return amp::DynamicLossScaling{};
  if (text == "tf_dynamic") {
    notes.push_back(path +
                    ".loss_scaling_factor: tf_dynamic is the TensorFlow spelling: it runs as "
                    "dynamic (use dynamic)");
    return amp::DynamicLossScaling{};
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw Error(path + "." + amp::loss_scaling_factor_error(text));
  }
  return amp::StaticLossScaling{v};
}

template <class T>
void optional_key(Reader& r, const char* key, std::optional<T>& out, const char* type_name) {
  if (r.has(key)) out = r.require<T>(key, type_name);
}

// precision.fp8: {enabled, recipe, history_length, amax_compute, margin}.
precision::Fp8Settings parse_fp8(Reader r) {
  precision::Fp8Settings f;
  f.enabled = r.get<bool>("enabled", f.enabled, kBool);
  f.recipe = r.get_named("recipe", f.recipe, precision::kFp8RecipeNames);
  f.history_length = r.get<int>("history_length", f.history_length, kInt);
  f.amax_compute = r.get_named("amax_compute", f.amax_compute, precision::kAmaxComputeNames);
  f.margin = r.get<int>("margin", f.margin, kInt);
  r.finish();
  return f;
}

// A format word for GEMM role `key` of the recipe (the recipe checks which it takes).
std::optional<numerics::Format> recipe_format(Reader& r, const char* key) {
  if (!r.has(key)) return std::nullopt;
  const auto text = r.require<std::string>(key, "a format name");
  const std::optional<numerics::Format> f = numerics::parse_format(text);
  if (!f) {
    throw Error(r.key_path(key) + ": '" + text +
                "' (expected one of: " + std::string(numerics::format_names()) + ")");
  }
  return f;
}

// recipe.layers: [{match: <pattern>, recipe: <recipe word or none>}, ...].
std::vector<precision::LayerOverride> parse_layer_overrides(const YAML::Node& list,
                                                            const std::string& path) {
  if (!list.IsSequence()) {
    throw Error(path + ": expected a list of {match: <parameter-name pattern>, recipe: <" +
                names_of(precision::kRecipeNames) + " or none>}");
  }
  std::vector<precision::LayerOverride> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Reader item(list[i], path + "[" + std::to_string(i) + "]");
    precision::LayerOverride o;
    o.match = item.require<std::string>("match", "a parameter-name pattern");
    const std::string expected =
        "a string (one of: " + names_of(precision::kRecipeNames) + ", none)";
    const auto word = item.require<std::string>("recipe", expected.c_str());
    if (word != precision::kNoRecipeWord) {
      o.recipe = parse_named(precision::kRecipeNames, word, item.key_path("recipe"));
    }
    item.finish();
    out.push_back(std::move(o));
  }
  return out;
}

// precision.recipe: {name, input, weight, grad, scale_rule, block_size, pad_blocks,
// power_of_two_scales, hadamard, stochastic_rounding, history_length, amax_compute, margin,
// layers}.
precision::RecipeSettings parse_recipe(Reader r) {
  precision::RecipeSettings s;
  s.recipe = r.require_named("name", precision::kRecipeNames);
  for (std::size_t i = 0; i < precision::kFp8Slots; ++i) {
    s.formats[i] = recipe_format(r, std::string(precision::kFp8SlotNames[i].name).c_str());
  }
  if (r.has("scale_rule"))
    s.scale_rule = r.require_named("scale_rule", numerics::kMxScaleRuleNames);
  optional_key(r, "block_size", s.block_size, kInt);
  optional_key(r, "pad_blocks", s.pad_blocks, kBool);
  optional_key(r, "power_of_two_scales", s.power_of_two_scales, kBool);
  optional_key(r, "hadamard", s.hadamard, kBool);
  optional_key(r, "stochastic_rounding", s.stochastic_rounding, kBool);
  optional_key(r, "history_length", s.history_length, kInt);
  if (r.has("amax_compute")) {
    s.amax_compute = r.require_named("amax_compute", precision::kAmaxComputeNames);
  }
  optional_key(r, "margin", s.margin, kInt);
  if (r.has("layers")) s.layers = parse_layer_overrides(r.raw("layers"), r.key_path("layers"));
  r.finish();
  return s;
}

}  // namespace

amp::MixedPrecision parse_precision(Reader r, std::vector<std::string>& notes) {
  amp::MixedPrecision m;
  m.enabled = r.get<bool>("enabled", m.enabled, kBool);
  if (r.has("fp16_type")) {
    const auto text = r.require<std::string>("fp16_type", "a string");
    const std::optional<numerics::Format> f = numerics::parse_format(text);
    if (!f || !precision::is_half_format(*f)) {
      throw Error(r.path() + "." + precision::fp16_type_error(text));
    }
    m.fp16_type = *f;
  }
  if (r.has("loss_scaling_factor")) {
    m.loss_scaling = parse_loss_scaling(
        r.require<std::string>("loss_scaling_factor", "\"dynamic\" or a number"), r.path(), notes);
  }
  optional_key(r, "initial_loss_scale", m.initial_loss_scale, kNum);
  optional_key(r, "steps_per_increase", m.steps_per_increase, kInt);
  optional_key(r, "min_loss_scale", m.min_loss_scale, kNum);
  optional_key(r, "max_loss_scale", m.max_loss_scale, kNum);
  optional_key(r, "max_gradient_norm", m.max_gradient_norm, kNum);
  optional_key(r, "max_gradient_value", m.max_gradient_value, kNum);
  optional_key(r, "log_loss_scale", m.log_loss_scale, kBool);
  m.precision_opt_level = r.get<int>("precision_opt_level", m.precision_opt_level, kInt);
  m.matmul_route = r.get_named("matmul_route", m.matmul_route, precision::kMatmulRouteNames);
  m.overflow_tolerance = r.get<double>("overflow_tolerance", m.overflow_tolerance, kNum);
  m.growth_factor = r.get<double>("growth_factor", m.growth_factor, kNum);
  m.backoff_factor = r.get<double>("backoff_factor", m.backoff_factor, kNum);
  m.on_stuck = r.get_named("on_stuck", m.on_stuck, amp::kStuckPolicyNames);
  m.hysteresis = r.get<int>("hysteresis", m.hysteresis, kInt);
  m.consecutive_hysteresis = r.get<bool>("consecutive_hysteresis", m.consecutive_hysteresis, kBool);
  if (r.has("fp8")) m.fp8 = parse_fp8(r.child("fp8"));
  if (r.has("recipe")) m.recipe = parse_recipe(r.child("recipe"));
  m.master_weights = r.get_named("master_weights", m.master_weights, optim::kMasterWeightsNames);
  m.on_nonfinite = r.get_named("on_nonfinite", m.on_nonfinite, amp::kNonFinitePolicyNames);
  m.max_consecutive_skipped_steps =
      r.get<std::int64_t>("max_consecutive_skipped_steps", m.max_consecutive_skipped_steps, kInt);
  r.finish();
  try {
    m.validate();
  } catch (const Error& e) {
    throw Error(r.path() + "." + e.what());
  }
  return m;
}

}  // namespace mantissa::config::detail
