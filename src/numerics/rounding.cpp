#include "mantissa/numerics/rounding.hpp"

namespace mantissa::numerics {

std::string_view rounding_name(Rounding r) {
  switch (r) {
    case Rounding::nearest_even:
      return "nearest_even";
    case Rounding::toward_zero:
      return "toward_zero";
    case Rounding::stochastic:
      return "stochastic";
  }
  return "?";
}

std::optional<Rounding> parse_rounding(std::string_view name) {
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
    if (rounding_name(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace mantissa::numerics
