// trainer.init.loop, with eval_frequency as the vendor takes it: an integer (steps between
// validations), a fraction in (0, 1] of max_steps, or 0 / null (no validation while training).
#include <cmath>

#include "config_internal.hpp"

namespace mantissa::config {

std::int64_t LoopConfig::eval_interval() const {
  if (const auto* every = std::get_if<EvalEvery>(&eval_frequency)) return every->steps;
  if (const auto* part = std::get_if<EvalFraction>(&eval_frequency)) {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(part->fraction * static_cast<double>(max_steps))));
  }
  return 0;
}

namespace detail {
namespace {

EvalFrequency parse_eval_frequency(Reader& r, EvalFrequency fallback) {
  const YAML::Node n = r.raw("eval_frequency");
  if (!n) return fallback;
  if (n.IsNull()) return NoEval{};
  const std::string where = r.key_path("eval_frequency");
  const std::string expected =
      "a positive integer (steps) or a fraction in (0, 1] of max_steps (0 or null: no "
      "validation while training)";
  const auto bad = [&] {
    return Error(where + ": " + (n.IsScalar() ? n.Scalar() : Reader::kind(n)) + " (expected " +
                 expected + ")");
  };
  if (!n.IsScalar() || n.Tag() == "!") throw bad();  // a quoted number is a string
  std::int64_t steps = 0;
  if (YAML::convert<std::int64_t>::decode(n, steps)) {
    if (steps < 0) throw bad();
    return steps == 0 ? EvalFrequency{NoEval{}} : EvalFrequency{EvalEvery{steps}};
  }
  double f = 0;
  if (!YAML::convert<double>::decode(n, f) || !(f >= 0.0 && f <= 1.0)) throw bad();
  if (f == 0.0) return NoEval{};
  return EvalFraction{f};
}

}  // namespace

LoopConfig parse_loop(Reader r) {
  LoopConfig c;
  c.max_steps = r.get_at_least("max_steps", c.max_steps, 1);
  c.eval_frequency = parse_eval_frequency(r, c.eval_frequency);
  c.eval_steps = r.get_at_least("eval_steps", c.eval_steps, 1);
  c.grad_accum_steps = r.get_at_least("grad_accum_steps", c.grad_accum_steps, 1);
  r.finish();
  return c;
}

}  // namespace detail
}  // namespace mantissa::config
