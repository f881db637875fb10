#include "precision_overrides.hpp"

#include <algorithm>
#include <array>

#include "mantissa/error.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::app {
namespace {

// Every word with its precision: float32, the half formats, then the recipes.
std::vector<std::pair<std::string, TrainingPrecision>> all_precisions() {
  std::vector<std::pair<std::string, TrainingPrecision>> out;
  out.emplace_back(std::string(numerics::name(numerics::Format::float32)), TrainingPrecision{});
  for (numerics::Format f : precision::kHalfFormats) {
    out.emplace_back(std::string(numerics::name(f)), TrainingPrecision{f, std::nullopt});
  }
  for (const auto& [word, recipe] : precision::kRecipeShortNames) {
    out.emplace_back(std::string(word), TrainingPrecision{numerics::Format::bfloat16, recipe});
  }
  return out;
}

}  // namespace

std::string training_precision_names() {
  std::string names;
  for (const auto& [word, p] : all_precisions()) names += (names.empty() ? "" : ", ") + word;
  return names;
}

std::string training_precision_name(const TrainingPrecision& p) {
  if (p.recipe) return std::string(name_of(precision::kRecipeShortNames, *p.recipe));
  return std::string(numerics::name(p.format));
}

TrainingPrecision parse_training_precision(std::string_view word, std::string_view option) {
  for (const auto& [name, p] : all_precisions()) {
    if (name == word) return p;
  }
  throw Error(std::string(option) + ": '" + std::string(word) +
              "' (expected one of: " + training_precision_names() + ")");
}

std::vector<TrainingPrecision> parse_training_precisions(std::string_view list,
                                                         std::string_view option) {
  std::vector<TrainingPrecision> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const TrainingPrecision p = parse_training_precision(list.substr(start, comma - start), option);
    if (std::find(out.begin(), out.end(), p) != out.end()) {
      throw Error(std::string(option) + ": '" + training_precision_name(p) + "' is listed twice");
    }
    out.push_back(p);
    start = comma + 1;
  }
  return out;
}

PrecisionOverrides precision_overrides(std::optional<TrainingPrecision> precision,
                                       const std::string& loss_scaling,
                                       std::optional<int> opt_level, const std::string& route) {
  const std::string key = "trainer.init.precision.";
  PrecisionOverrides p;
  std::vector<std::string>& o = p.after;
  if (precision) {
    // The config file's recipe and fp8 settings go first: the word says what runs. The
    // user's --set comes after them (a recipe word's settings, scale_rule and so on), and
    // what the word does not run is dropped again after it.
    p.before = {key + "recipe=null", key + "fp8=null"};
    if (precision->recipe != precision::Recipe::delayed) o.push_back(key + "fp8=null");
    if (!precision->recipe || precision->recipe == precision::Recipe::delayed) {
      o.push_back(key + "recipe=null");
    }
  }
  if (precision && precision->format == numerics::Format::float32) {
    o.push_back(key + "enabled=false");
  } else if (precision) {
    o.push_back(key + "enabled=true");
    o.push_back(key + "fp16_type=" + std::string(numerics::name(precision->format)));
    if (precision->recipe == precision::Recipe::delayed) {
      o.push_back(key + "fp8.enabled=true");  // the spelling runs have always recorded
    } else if (precision->recipe) {
      o.push_back(
          key + "recipe.name=" + std::string(name_of(precision::kRecipeNames, *precision->recipe)));
    }
    // float16 and cbfloat16 need loss scaling (docs/design.md section 4): dynamic unless told.
    if ((precision->format == numerics::Format::float16 ||
         precision->format == numerics::Format::cbfloat16) &&
        loss_scaling.empty()) {
      o.push_back(key + "loss_scaling_factor=dynamic");
    }
  }
  if (!loss_scaling.empty()) o.push_back(key + "loss_scaling_factor=" + loss_scaling);
  if (opt_level) o.push_back(key + "precision_opt_level=" + std::to_string(*opt_level));
  if (!route.empty()) o.push_back(key + "matmul_route=" + route);
  return p;
}

std::vector<std::string> around(const PrecisionOverrides& p, const std::vector<std::string>& user) {
  std::vector<std::string> o = p.before;
  o.insert(o.end(), user.begin(), user.end());
  o.insert(o.end(), p.after.begin(), p.after.end());
  return o;
}

}  // namespace mantissa::app
