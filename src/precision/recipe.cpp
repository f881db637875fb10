#include "mantissa/precision/recipe.hpp"

#include <algorithm>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::precision {
namespace {

using numerics::MxScaleRule;

constexpr int kMxBlock = 32, kBlockwiseBlock = 128, kNvfp4Block = 16, kMaxBlock = 4096;

std::string recipe_word(Recipe r) {
  return std::string(name_of(kRecipeNames, r));
}

// The recipes a run uses: the main one and every override's.
std::vector<Recipe> recipes_in_use(const RecipeSettings& s) {
  std::vector<Recipe> out{s.recipe};
  for (const LayerOverride& o : s.layers) {
    if (o.recipe && std::find(out.begin(), out.end(), *o.recipe) == out.end()) {
      out.push_back(*o.recipe);
    }
  }
  return out;
}

// "recipe.<key>: <what> applies to a, b; this run uses c": a setting no recipe in use reads.
template <class Reads>
void require_reader(const RecipeSettings& s, bool given, const char* key, const char* what,
                    Reads reads) {
  if (!given) return;
  const std::vector<Recipe> used = recipes_in_use(s);
  if (std::any_of(used.begin(), used.end(), reads)) return;
  std::string readers, users;
  for (std::size_t i = 0; i < kRecipeCount; ++i) {
    const Recipe r = static_cast<Recipe>(i);
    if (reads(r)) readers += (readers.empty() ? "" : ", ") + recipe_word(r);
  }
  for (Recipe r : used) users += (users.empty() ? "" : ", ") + recipe_word(r);
  throw Error(std::string("recipe.") + key + ": " + what + " (it applies to " + readers +
              "; this run uses " + users + ")");
}

std::string format_list(const std::vector<Format>& fs) {
  std::string out;
  for (Format f : fs) out += (out.empty() ? "" : ", ") + std::string(numerics::name(f));
  return out;
}

Fp8Settings fp8_settings(const RecipeSettings& s) {
  Fp8Settings f;
  f.enabled = true;
  f.recipe = s.fp8_formats;
  f.history_length = s.history_length.value_or(f.history_length);
  f.amax_compute = s.amax_compute.value_or(f.amax_compute);
  f.margin = s.margin.value_or(f.margin);
  return f;
}

}  // namespace

bool is_mx(Recipe r) {
  return r == Recipe::mxfp8 || r == Recipe::mxfp6 || r == Recipe::mxfp4;
}

bool has_blocks(Recipe r) {
  return is_mx(r) || r == Recipe::blockwise || r == Recipe::nvfp4;
}

Format default_format(Recipe r, Fp8Slot role, Fp8Recipe fp8_formats) {
  const bool grad = role == Fp8Slot::grad;
  switch (r) {
    case Recipe::delayed:
    case Recipe::current:
      return grad && fp8_formats == Fp8Recipe::hybrid ? Format::float8_e5m2 : Format::float8_e4m3;
    case Recipe::blockwise:
    case Recipe::mxfp8:
      return Format::float8_e4m3;
    case Recipe::mxfp6:
      return grad ? Format::float6_e3m2 : Format::float6_e2m3;
    case Recipe::mxfp4:
    case Recipe::nvfp4:
      return Format::float4_e2m1;
  }
  return Format::float8_e4m3;
}

std::vector<Format> allowed_formats(Recipe r) {
  if (is_mx(r))
    return {numerics::kBlockElementFormats.begin(), numerics::kBlockElementFormats.end()};
  if (r == Recipe::nvfp4) return {Format::float4_e2m1};
  return {Format::float8_e4m3, Format::float8_e5m2};
}

void RecipeSettings::validate() const {
  for (std::size_t i = 0; i < kFp8Slots; ++i) {
    if (!formats[i]) continue;
    const std::vector<Format> allowed = allowed_formats(recipe);
    if (std::find(allowed.begin(), allowed.end(), *formats[i]) == allowed.end()) {
      throw Error("recipe." + std::string(kFp8SlotNames[i].name) + ": " +
                  std::string(numerics::name(*formats[i])) + " (the " + recipe_word(recipe) +
                  " recipe takes " + format_list(allowed) + ")");
    }
  }
  require_reader(*this, scale_rule.has_value(), "scale_rule",
                 "a rule for E8M0 block scales, which only the MX recipes have", is_mx);
  require_reader(*this, block_size.has_value(), "block_size",
                 "the MX and blockwise block size (nvfp4's blocks are 16 by definition; the "
                 "per-tensor recipes have none)",
                 [](Recipe r) { return is_mx(r) || r == Recipe::blockwise; });
  require_reader(*this, pad_blocks.has_value(), "pad_blocks", "a setting of block-scaled recipes",
                 has_blocks);
  require_reader(*this, power_of_two_scales.has_value(), "power_of_two_scales",
                 "a setting of the float32-scaled fp8 recipes",
                 [](Recipe r) { return r == Recipe::current || r == Recipe::blockwise; });
  const auto nvfp4 = [](Recipe r) { return r == Recipe::nvfp4; };
  require_reader(*this, hadamard.has_value(), "hadamard", "nvfp4's rotation", nvfp4);
  require_reader(*this, stochastic_rounding.has_value(), "stochastic_rounding",
                 "nvfp4's gradient rounding", nvfp4);
  const auto delayed = [](Recipe r) { return r == Recipe::delayed; };
  require_reader(*this, history_length.has_value(), "history_length",
                 "the delayed recipe's amax history", delayed);
  require_reader(*this, amax_compute.has_value(), "amax_compute",
                 "the delayed recipe's amax history", delayed);
  require_reader(*this, margin.has_value(), "margin", "the delayed recipe's scale margin", delayed);
  if (block_size && (*block_size < 1 || *block_size > kMaxBlock)) {
    throw Error("recipe.block_size: " + std::to_string(*block_size) + " (expected 1 to " +
                std::to_string(kMaxBlock) + ")");
  }
  try {
    fp8_settings(*this).validate();
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("fp8.", 0) == 0) what.replace(0, 4, "recipe.");
    throw Error(what);
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].match.empty()) {
      throw Error("recipe.layers[" + std::to_string(i) + "].match: an empty pattern");
    }
  }
}

RecipeSettings delayed_recipe(const Fp8Settings& fp8) {
  RecipeSettings s;
  s.recipe = Recipe::delayed;
  s.history_length = fp8.history_length;
  s.amax_compute = fp8.amax_compute;
  s.margin = fp8.margin;
  s.fp8_formats = fp8.recipe;
  return s;
}

LayerRecipe resolve(const RecipeSettings& s, Recipe r) {
  LayerRecipe l;
  l.recipe = r;
  for (std::size_t i = 0; i < kFp8Slots; ++i) {
    const std::optional<Format>& given = s.formats[i];
    l.formats[i] =
        r == s.recipe && given ? *given : default_format(r, static_cast<Fp8Slot>(i), s.fp8_formats);
  }
  l.scale_rule = s.scale_rule.value_or(MxScaleRule::rceil);
  if (is_mx(r)) l.block_size = s.block_size.value_or(kMxBlock);
  if (r == Recipe::blockwise) l.block_size = s.block_size.value_or(kBlockwiseBlock);
  if (r == Recipe::nvfp4) l.block_size = kNvfp4Block;
  // blockwise pads by default: its 128-wide tiles rarely divide a small model's widths.
  l.pad_blocks = has_blocks(r) && s.pad_blocks.value_or(r == Recipe::blockwise);
  l.power_of_two_scales = (r == Recipe::current && s.power_of_two_scales.value_or(false)) ||
                          (r == Recipe::blockwise && s.power_of_two_scales.value_or(true));
  l.hadamard = r == Recipe::nvfp4 && s.hadamard.value_or(true);
  l.stochastic_rounding = r == Recipe::nvfp4 && s.stochastic_rounding.value_or(true);
  if (r == Recipe::delayed) l.fp8 = fp8_settings(s);
  return l;
}

std::string LayerRecipe::describe() const {
  std::string out = recipe_word(recipe) + " (";
  for (std::size_t i = 0; i < kFp8Slots; ++i) {
    out += std::string(i == 0 ? "" : ", ") + std::string(kFp8SlotNames[i].name) + " " +
           std::string(numerics::name(formats[i]));
  }
  switch (recipe) {
    case Recipe::delayed:
      out += "; amax history " + std::to_string(fp8.history_length) + " (" +
             std::string(name_of(kAmaxComputeNames, fp8.amax_compute)) + "), margin " +
             std::to_string(fp8.margin);
      break;
    case Recipe::current:
      out += std::string("; a scale per tensor") + (power_of_two_scales ? ", powers of two" : "");
      break;
    case Recipe::blockwise:
      out += "; float32 scales per 1x" + std::to_string(block_size) + " tile and " +
             std::to_string(block_size) + "x" + std::to_string(block_size) + " weight block" +
             (power_of_two_scales ? ", powers of two" : "");
      break;
    case Recipe::mxfp8:
    case Recipe::mxfp6:
    case Recipe::mxfp4:
      out += "; E8M0 scales per " + std::to_string(block_size) + ", " +
             std::string(name_of(numerics::kMxScaleRuleNames, scale_rule));
      break;
    case Recipe::nvfp4:
      out += std::string("; e4m3 scales per 1x16 (weights 16x16) and a float32 tensor scale") +
             ", hadamard " + (hadamard ? "on" : "off") + ", stochastic rounding " +
             (stochastic_rounding ? "on" : "off");
      break;
  }
  if (pad_blocks) out += ", padded blocks";
  return out + ")";
}

LinearQuant::LinearQuant(LayerRecipe recipe, std::shared_ptr<StochasticStream> stream)
    : recipe_(std::move(recipe)), stream_(std::move(stream)) {
  if (!stream_) stream_ = std::make_shared<StochasticStream>();
  if (recipe_.recipe == Recipe::delayed) {
    delayed_ = std::make_shared<Fp8Meta>(recipe_.fp8, recipe_.formats);
  }
}

}  // namespace mantissa::precision
