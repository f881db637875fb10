#include "optimizer_checks.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>

#include "mantissa/error.hpp"

namespace mantissa::optim::detail {
namespace {

// State that is a sum of squares, a running maximum of magnitudes or a step size: >= 0 in
// any state an optimizer can reach.
bool non_negative_state(const std::string& name) {
  static const char* const kNames[] = {"exp_avg_sq",     "max_exp_avg_sq", "exp_avg_sq_row",
                                       "exp_avg_sq_col", "exp_inf",        "sum",
                                       "square_avg",     "acc_delta",      "step_size"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* n) { return name == n; });
}

}  // namespace

void check_loaded_state(const Tensor& t, const std::string& full, const std::string& name,
                        const std::string& optimizer) {
  const Tensor f = t.format() == numerics::Format::float32 ? t : t.to(numerics::Format::float32);
  const float* v = f.f32();
  const bool positive = non_negative_state(name);
  for (std::int64_t i = 0; i < f.numel(); ++i) {
    if (std::isfinite(v[i]) && (!positive || v[i] >= 0)) continue;
    std::ostringstream value;
    value << v[i];
    throw Error("optimizer " + optimizer + ": state '" + full + "' holds " + value.str() +
                " at index " + std::to_string(i) + " (expected " +
                (positive ? "a finite number >= 0" : "a finite number") +
                "): the optimizer state is invalid");
  }
}

void check_parameter_list(const std::vector<ParamGroup>& groups) {
  // Every parameter defined and listed once, every name once: a parameter listed twice would
  // be updated twice a step, and two parameters of one name would share one state entry.
  std::map<const void*, std::string> seen;
  std::map<std::string, std::string> named;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      const std::string where = "parameter " + std::to_string(i) + " of group " + std::to_string(g);
      const Variable& p = groups[g].params[i];
      if (!p.defined()) throw Error("optimizer: " + where + " is undefined");
      if (const auto [it, added] = seen.emplace(p.id(), where); !added) {
        throw Error("optimizer: " + where + " is " + it->second +
                    " again (each parameter may be listed once)");
      }
      const std::string pname = parameter_name(groups[g], g, i);
      if (const auto [it, added] = named.emplace(pname, where); !added) {
        throw Error("optimizer: " + where + " and " + it->second + " are both named '" + pname +
                    "' (names key the optimizer state: each must be unique)");
      }
    }
  }
}

}  // namespace mantissa::optim::detail
