#include "precision_overrides.hpp"

#include <array>

#include "mantissa/error.hpp"

namespace mantissa::app {
namespace {

using numerics::Format;
constexpr std::array<Format, 4> kTrainingFormats = {Format::float32, Format::bfloat16,
                                                    Format::float16, Format::cbfloat16};

}  // namespace

numerics::Format parse_training_format(std::string_view word, std::string_view option) {
  std::string names;
  for (const Format f : kTrainingFormats) {
    if (numerics::name(f) == word) return f;
    names += (names.empty() ? "" : ", ") + std::string(numerics::name(f));
  }
  throw Error(std::string(option) + ": '" + std::string(word) + "' (expected one of: " + names +
              ")");
}

std::vector<std::string> precision_overrides(std::optional<numerics::Format> format,
                                             const std::string& loss_scaling, int opt_level,
                                             const std::string& route) {
  const std::string key = "trainer.init.precision.";
  std::vector<std::string> o;
  if (format == Format::float32) {
    o.push_back(key + "enabled=false");
  } else if (format) {
    o.push_back(key + "enabled=true");
    o.push_back(key + "fp16_type=" + std::string(numerics::name(*format)));
    // float16 and cbfloat16 need loss scaling (DESIGN.md section 4): dynamic unless told.
    if (*format != Format::bfloat16 && loss_scaling.empty()) {
      o.push_back(key + "loss_scaling_factor=dynamic");
    }
  }
  if (!loss_scaling.empty()) o.push_back(key + "loss_scaling_factor=" + loss_scaling);
  if (opt_level >= 0) o.push_back(key + "precision_opt_level=" + std::to_string(opt_level));
  if (!route.empty()) o.push_back(key + "matmul_route=" + route);
  return o;
}

}  // namespace mantissa::app
