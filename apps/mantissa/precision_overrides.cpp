#include "precision_overrides.hpp"

#include <algorithm>
#include <array>

#include "mantissa/error.hpp"

namespace mantissa::app {
TrainingPrecision parse_training_precision(std::string_view word, std::string_view option) {
  std::string names;
  for (const auto& [name, value] : kTrainingPrecisionNames) {
    if (name == word) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw Error(std::string(option) + ": '" + std::string(word) + "' (expected one of: " + names +
              ")");
}

std::vector<TrainingPrecision> parse_training_precisions(std::string_view list,
                                                         std::string_view option) {
  std::vector<TrainingPrecision> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const TrainingPrecision p = parse_training_precision(list.substr(start, comma - start), option);
    for (const TrainingPrecision seen : out) {
      if (seen == p) {
        throw Error(std::string(option) + ": '" + std::string(name_of(kTrainingPrecisionNames, p)) +
                    "' is listed twice");
      }
    }
    out.push_back(p);
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> precision_overrides(std::optional<TrainingPrecision> precision,
                                             const std::string& loss_scaling, int opt_level,
                                             const std::string& route) {
  const std::string key = "trainer.init.precision.";
  std::vector<std::string> o;
  if (precision == TrainingPrecision::float32) {
    o.push_back(key + "enabled=false");
  } else if (precision) {
    const bool fp8 = *precision == TrainingPrecision::fp8;
    o.push_back(key + "enabled=true");
    o.push_back(key + "fp16_type=" +
                std::string(fp8 ? "bfloat16" : name_of(kTrainingPrecisionNames, *precision)));
    if (fp8) o.push_back(key + "fp8.enabled=true");
    // float16 and cbfloat16 need loss scaling (docs/design.md section 4): dynamic unless told.
    if ((*precision == TrainingPrecision::float16 || *precision == TrainingPrecision::cbfloat16) &&
        loss_scaling.empty()) {
      o.push_back(key + "loss_scaling_factor=dynamic");
    }
  }
  if (!loss_scaling.empty()) o.push_back(key + "loss_scaling_factor=" + loss_scaling);
  if (opt_level >= 0) o.push_back(key + "precision_opt_level=" + std::to_string(opt_level));
  if (!route.empty()) o.push_back(key + "matmul_route=" + route);
  return o;
}

}  // namespace mantissa::app
