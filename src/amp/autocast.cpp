#include "mantissa/amp/autocast.hpp"

#include <atomic>
#include <optional>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::amp {
namespace {
std::atomic<numerics::Format> g_half{numerics::Format::float16};
}  // namespace

numerics::Format set_half_dtype(numerics::Format half) {
  if (!precision::is_half_format(half)) {
    throw Error(precision::fp16_type_error(numerics::name(half)));
  }
  g_half.store(half);
  return half;
}

numerics::Format set_half_dtype(std::string_view half) {
  const std::optional<numerics::Format> f = numerics::parse_format(half);
  if (!f) throw Error(precision::fp16_type_error(half));
  return set_half_dtype(*f);
}

numerics::Format half_dtype() {
  return g_half.load();
}

precision::Autocast autocast(int precision_opt_level) {
  return precision::Autocast(precision::Policy{half_dtype(), precision_opt_level});
}

}  // namespace mantissa::amp
