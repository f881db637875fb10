// The vendor's scheduler classes in YAML (`{CosineDecayLR: {...}}`, `{LinearWD: {...}}`): each
// class drives the learning rate (*LR) or the weight decay (*WD) with the same closed form;
// the two spell their values differently (initial_learning_rate / initial_val, ...).
#include <algorithm>
#include <array>
#include <limits>

#include "config_internal.hpp"
#include "support/number_text.hpp"

namespace mantissa::config::detail {
namespace {

const char* const kNum = "a number";
const char* const kInt = "an integer";
const char* const kBool = "true or false";

// The names of a scheduler's value parameters, per driven key.
struct Spelling {
  ScheduledKey key;
  const char* value;        // ConstantLR / ConstantWD
  const char* initial;      // the value at step 0
  const char* end;          // the value the decay ends at
  const char* base;         // CyclicLR's lower bound
  const char* max;          // CyclicLR's upper bound, OneCycleLR's peak
  const char* values;       // PiecewiseConstantLR
  const char* final_value;  // OneCycleLR's last value (mantissa's spelling), or none
};
constexpr Spelling kLearningRate{ScheduledKey::learning_rate,
                                 "learning_rate",
                                 "initial_learning_rate",
                                 "end_learning_rate",
                                 "base_lr",
                                 "max_lr",
                                 "learning_rates",
                                 "final_learning_rate"};
constexpr Spelling kWeightDecay{ScheduledKey::weight_decay,
                                "val",
                                "initial_val",
                                "end_val",
                                "base_val",
                                "max_val",
                                "vals",
                                nullptr};

struct Nested {
  std::vector<optim::SchedulePtr> schedules;
  std::vector<std::optional<std::int64_t>> total_iters;  // each one's, when it has one
};
Nested nested_list(Reader& r, const Spelling& sp);

std::vector<std::int64_t> int_list(Reader& r, const std::string& key) {
  std::vector<std::int64_t> out;
  const YAML::Node n = r.raw(key);
  if (!n || !n.IsSequence()) throw Error(r.key_path(key) + ": expected a list of integers");
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(
        Reader::as<std::int64_t>(n[i], r.key_path(key) + "[" + std::to_string(i) + "]", kInt));
  }
  return out;
}

std::vector<double> double_list(Reader& r, const std::string& key) {
  std::vector<double> out;
  const YAML::Node n = r.raw(key);
  if (!n || !n.IsSequence()) throw Error(r.key_path(key) + ": expected a list of numbers");
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(Reader::as<double>(n[i], r.key_path(key) + "[" + std::to_string(i) + "]", kNum));
  }
  return out;
}

double number(Reader& r, const char* key) {
  return r.require<double>(key, kNum);
}
// A learning rate or weight decay: finite and >= 0 (PyTorch's rule for both).
double value(Reader& r, const char* key) {
  return r.require_number(key, optim::kNonNegative);
}
std::int64_t integer(Reader& r, const char* key) {
  return r.require<std::int64_t>(key, kInt);
}

// CyclicLR's scale_mode: accepted and checked; as in the vendor's scheduler (and PyTorch's
// built-in modes) the mode decides how the amplitude scales, so it changes no value.
enum class CyclicScaleMode { cycle, iterations };
constexpr NameTable<CyclicScaleMode, 2> kCyclicScaleModeNames = {
    {{"cycle", CyclicScaleMode::cycle}, {"iterations", CyclicScaleMode::iterations}}};
static_assert(in_enum_order(kCyclicScaleModeNames,
                            static_cast<std::size_t>(CyclicScaleMode::iterations) + 1));

optim::SchedulePtr one_cycle(Reader& r, const Spelling& sp) {
  // The rates are factors of the peak: initial = max / div_factor, final = initial /
  // final_div_factor (PyTorch's definition). The peak and final_div_factor are positive finite
  // numbers (0 made every later rate NaN); a rate of 0 is an infinite factor.
  const double max_value = r.require_number(sp.max, optim::kPositive);
  const double first = r.get_number(sp.initial, max_value / 25.0, optim::kNonNegative);
  double final_div = r.get_number("final_div_factor", 1e4, optim::kPositive);
  if (sp.final_value != nullptr && r.has(sp.final_value)) {
    if (r.has("final_div_factor")) {
      throw Error(r.key_path(sp.final_value) + ": also given as final_div_factor: set one");
    }
    const double last = value(r, sp.final_value);
    if (first == 0 && last > 0) {
      throw Error(r.key_path(sp.final_value) + ": " + support::value_text(last) + " after " +
                  r.key_path(sp.initial) +
                  " 0 (the final rate is the initial one divided by a factor: it must be 0 too)");
    }
    final_div = last > 0 ? first / last : std::numeric_limits<double>::infinity();
  }
  const double div = first > 0 ? max_value / first : std::numeric_limits<double>::infinity();
  return optim::one_cycle(max_value, r.get<std::int64_t>("total_steps", 1000, kInt),
                          r.get<double>("pct_start", 0.3, kNum),
                          r.get_named("anneal_strategy", optim::Anneal::cos, optim::kAnnealNames),
                          div, final_div, r.get<bool>("three_phase", false, kBool));
}

optim::SchedulePtr sequential(Reader& r, const Spelling& sp) {
  if (r.has("last_epoch") && r.require<std::int64_t>("last_epoch", kInt) != -1) {
    throw Error(r.key_path("last_epoch") +
                ": only -1 (a schedule is a function of the global step; a checkpoint resumes it)");
  }
  Nested nested = nested_list(r, sp);
  if (r.has("milestones")) return optim::sequential(nested.schedules, int_list(r, "milestones"));
  // Without milestones each scheduler runs for its total_iters (the vendor's reading).
  std::vector<std::int64_t> milestones;
  for (std::size_t i = 0; i + 1 < nested.schedules.size(); ++i) {
    if (!nested.total_iters[i]) {
      throw Error(r.key_path("milestones") + ": missing, and schedulers[" + std::to_string(i) +
                  "] has no total_iters to place the switch by");
    }
    milestones.push_back((milestones.empty() ? 0 : milestones.back()) + *nested.total_iters[i]);
  }
  return optim::sequential(nested.schedules, milestones);
}

// One scheduler class: its kind, its names for the learning rate and the weight decay, and
// how its parameters are read and handed to the optim factory that builds it.
struct ScheduleEntry {
  optim::ScheduleKind kind;
  const char* lr_name;
  const char* wd_name;
  optim::SchedulePtr (*parse)(Reader& r, const Spelling& sp);
};

constexpr std::array<ScheduleEntry, optim::kScheduleKindCount> kSchedules = {{
    {optim::ScheduleKind::constant, "ConstantLR", "ConstantWD",
     [](Reader& r, const Spelling& sp) {
       r.get<std::int64_t>("total_iters", 0, kInt);  // SequentialLR's switch point
       return optim::constant(value(r, sp.value));
     }},
    {optim::ScheduleKind::linear, "LinearLR", "LinearWD",
     [](Reader& r, const Spelling& sp) {
       const double a = value(r, sp.initial), b = value(r, sp.end);
       const std::int64_t t = integer(r, "total_iters");
       return r.get<bool>("cycle", false, kBool) ? optim::polynomial(a, b, t, 1.0, true)
                                                 : optim::linear(a, b, t);
     }},
    {optim::ScheduleKind::polynomial, "PolynomialLR", "PolynomialWD",
     [](Reader& r, const Spelling& sp) {
       return optim::polynomial(value(r, sp.initial), value(r, sp.end), integer(r, "total_iters"),
                                r.get<double>("power", 1.0, kNum),
                                r.get<bool>("cycle", false, kBool));
     }},
    {optim::ScheduleKind::exponential, "ExponentialLR", "ExponentialWD",
     [](Reader& r, const Spelling& sp) {
       return optim::exponential(value(r, sp.initial), integer(r, "total_iters"),
                                 number(r, "decay_rate"), r.get<bool>("staircase", false, kBool));
     }},
    {optim::ScheduleKind::inverse_exponential_time_decay, "InverseExponentialTimeDecayLR",
     "InverseExponentialTimeDecayWD",
     [](Reader& r, const Spelling& sp) {
       return optim::inverse_exponential_time_decay(
           value(r, sp.initial), number(r, "step_exponent"), integer(r, "total_iters"),
           number(r, "decay_rate"), r.get<bool>("staircase", false, kBool));
     }},
    {optim::ScheduleKind::inverse_square_root_decay, "InverseSquareRootDecayLR",
     "InverseSquareRootDecayWD",
     [](Reader& r, const Spelling& sp) {
       return optim::inverse_square_root_decay(r.get_number(sp.initial, 1.0, optim::kNonNegative),
                                               r.get<double>("scale", 1.0, kNum),
                                               r.get<std::int64_t>("warmup_steps", 1, kInt));
     }},
    {optim::ScheduleKind::cosine_decay, "CosineDecayLR", "CosineDecayWD",
     [](Reader& r, const Spelling& sp) {
       return optim::cosine_decay(value(r, sp.initial), value(r, sp.end),
                                  integer(r, "total_iters"));
     }},
    {optim::ScheduleKind::cosine_annealing, "CosineAnnealingLR", "CosineAnnealingWD",
     [](Reader& r, const Spelling& sp) {
       return optim::cosine_annealing(value(r, sp.initial), integer(r, "T_max"),
                                      r.get_number("eta_min", 0.0, optim::kNonNegative));
     }},
    {optim::ScheduleKind::cosine_annealing_warm_restarts, "CosineAnnealingWarmRestarts",
     "CosineAnnealingWarmRestartsWD",
     [](Reader& r, const Spelling& sp) {
       return optim::cosine_annealing_warm_restarts(
           value(r, sp.initial), integer(r, "T_0"), r.get<std::int64_t>("T_mult", 1, kInt),
           r.get_number("eta_min", 0.0, optim::kNonNegative));
     }},
    {optim::ScheduleKind::step_decay, "StepLR", "StepWD",
     [](Reader& r, const Spelling& sp) {
       return optim::step_decay(value(r, sp.initial), integer(r, "step_size"),
                                r.get<double>("gamma", 0.1, kNum));
     }},
    {optim::ScheduleKind::multi_step, "MultiStepLR", "MultiStepWD",
     [](Reader& r, const Spelling& sp) {
       return optim::multi_step(value(r, sp.initial), int_list(r, "milestones"),
                                r.get<double>("gamma", 0.1, kNum));
     }},
    {optim::ScheduleKind::multiplicative, "MultiplicativeLR", "MultiplicativeWD",
     [](Reader& r, const Spelling& sp) {
       return optim::multiplicative(value(r, sp.initial), number(r, "coefficient"));
     }},
    {optim::ScheduleKind::cyclic, "CyclicLR", "CyclicWD",
     [](Reader& r, const Spelling& sp) {
       const std::int64_t up = r.get_at_least("step_size_up", 2000, 1);
       r.get_named("scale_mode", CyclicScaleMode::cycle, kCyclicScaleModeNames);
       return optim::cyclic(
           value(r, sp.base), value(r, sp.max), up, r.get_at_least("step_size_down", up, 1),
           r.get_named("mode", optim::CyclicMode::triangular, optim::kCyclicModeNames),
           r.get<double>("gamma", 1.0, kNum));
     }},
    {optim::ScheduleKind::one_cycle, "OneCycleLR", "OneCycleWD", one_cycle},
    {optim::ScheduleKind::sequential, "SequentialLR", "SequentialWD", sequential},
    {optim::ScheduleKind::piecewise_constant, "PiecewiseConstantLR", "PiecewiseConstantWD",
     [](Reader& r, const Spelling& sp) {
       std::vector<double> values = double_list(r, sp.values);
       for (std::size_t i = 0; i < values.size(); ++i) {
         r.in_range(std::string(sp.values) + "[" + std::to_string(i) + "]", values[i],
                    optim::kNonNegative);
       }
       return optim::piecewise_constant(values, int_list(r, "milestones"));
     }},
    {optim::ScheduleKind::chained, "ChainedLR", "ChainedWD",
     [](Reader& r, const Spelling& sp) { return optim::chained(nested_list(r, sp).schedules); }},
}};

// Entry i is kind i: a kind added to optim without its entry here fails to compile.
constexpr bool entries_in_kind_order() {
  for (std::size_t i = 0; i < kSchedules.size(); ++i) {
    if (static_cast<std::size_t>(kSchedules[i].kind) != i) return false;
  }
  return true;
}
static_assert(entries_in_kind_order(), "kSchedules must list every ScheduleKind, in order");
static_assert(static_cast<std::size_t>(optim::ScheduleKind::chained) + 1 ==
                  optim::kScheduleKindCount,
              "kScheduleKindCount must count every ScheduleKind");

// Other names: the vendor's second name for ChainedLR, and the wrappers that scale a group's
// value by its adjust_learning_rate.
constexpr std::string_view kChainedAlias = "ChainedScheduler";
constexpr std::string_view kScalePerParamLR = "ScalePerParamLR";
constexpr std::string_view kScalePerParamWD = "ScalePerParamWD";
// Names the vendor has that are not read here, each with the reason.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kRefused = {{
    {"LambdaLR",
     "a lambda is code: the vendor's YAML form is a fixed demonstration function "
     "(init^2 * t/30 * 0.95^t) meant to be overridden in Python; from C++ pass any "
     "function of the step to optim::lambda"},
    {"LambdaWD", "a lambda is code (see LambdaLR); from C++ use optim::lambda"},
}};

struct Found {
  const ScheduleEntry* entry = nullptr;  // null: a ScalePerParam wrapper
  const Spelling* spelling = nullptr;
};

std::string schedule_names() {
  std::string out;
  for (const ScheduleEntry& e : kSchedules) {
    out += (out.empty() ? "" : ", ") + std::string(e.lr_name) + ", " + e.wd_name;
  }
  return out + ", " + std::string(kChainedAlias) + ", " + std::string(kScalePerParamLR) + ", " +
         std::string(kScalePerParamWD);
}

Found find_schedule(const std::string& name, const std::string& path) {
  if (name == kScalePerParamLR) return {nullptr, &kLearningRate};
  if (name == kScalePerParamWD) return {nullptr, &kWeightDecay};
  for (const ScheduleEntry& e : kSchedules) {
    if (name == e.lr_name || (name == kChainedAlias && e.kind == optim::ScheduleKind::chained)) {
      return {&e, &kLearningRate};
    }
    if (name == e.wd_name) return {&e, &kWeightDecay};
  }
  for (const auto& [refused, reason] : kRefused) {
    if (name == refused)
      throw Error(path + ": " + name + " is not accepted: " + std::string(reason));
  }
  throw Error(path + ": unknown scheduler '" + name + "' (expected one of: " + schedule_names() +
              ")");
}

// Runs `parse` with errors that do not name their key yet placed at `path`.
template <class F>
auto at_path(const std::string& path, F&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);  // the schedule's own check, placed at its key
  }
}

std::string name_of_node(const YAML::Node& node, const std::string& path) {
  if (!node || !node.IsMap() || node.size() != 1) {
    throw Error(path + ": expected one scheduler, as {Name: {parameters}} (names: " +
                schedule_names() + ")");
  }
  return Reader::key_text(node.begin()->first, path);
}

// A scheduler inside SequentialLR, ChainedLR or ScalePerParamLR: of the outer's key, without
// param_group_tags of its own (it follows the outer's).
std::pair<optim::SchedulePtr, std::optional<std::int64_t>> parse_nested(const YAML::Node& node,
                                                                        const std::string& path,
                                                                        const Spelling& outer) {
  const std::string name = name_of_node(node, path);
  const Found f = find_schedule(name, path);
  if (f.entry == nullptr) throw Error(path + ": " + name + " wraps a top-level scheduler only");
  if (f.spelling->key != outer.key) {
    throw Error(path + ": " + name + " drives " +
                std::string(name_of(kScheduledKeyNames, f.spelling->key)) +
                ", but the scheduler it is nested in drives " +
                std::string(name_of(kScheduledKeyNames, outer.key)));
  }
  const YAML::Node params = node.begin()->second;
  Reader r(params, path + "." + name);
  if (r.has("param_group_tags")) {
    throw Error(r.key_path("param_group_tags") +
                ": set it on the outer scheduler (nested schedulers follow its tags)");
  }
  // Peeked, not read: the class's own parse accepts the key or refuses it.
  std::optional<std::int64_t> total_iters;
  if (params.IsMap() && params["total_iters"]) {
    total_iters = Reader::as<std::int64_t>(params["total_iters"], r.key_path("total_iters"), kInt);
  }
  optim::SchedulePtr s = at_path(path, [&] { return f.entry->parse(r, *f.spelling); });
  r.finish();
  return {s, total_iters};
}

Nested nested_list(Reader& r, const Spelling& sp) {
  const YAML::Node n = r.raw("schedulers");
  if (!n || !n.IsSequence())
    throw Error(r.key_path("schedulers") + ": expected a list of schedulers");
  Nested out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    auto [s, total] =
        parse_nested(n[i], r.key_path("schedulers") + "[" + std::to_string(i) + "]", sp);
    out.schedules.push_back(s);
    out.total_iters.push_back(total);
  }
  return out;
}

}  // namespace

SchedulerName scheduler_name(const std::string& name, const std::string& path) {
  const Found f = find_schedule(name, path);
  return {f.spelling->key, f.entry == nullptr};
}

optim::SchedulePtr parse_schedule_class(const std::string& name, Reader& r,
                                        const std::string& path) {
  const Found f = find_schedule(name, path);
  return at_path(path, [&] { return f.entry->parse(r, *f.spelling); });
}

optim::SchedulePtr parse_nested_schedule(const YAML::Node& node, const std::string& path,
                                         ScheduledKey key) {
  return parse_nested(node, path, key == ScheduledKey::learning_rate ? kLearningRate : kWeightDecay)
      .first;
}

std::string scheduler_node_name(const YAML::Node& node, const std::string& path) {
  return name_of_node(node, path);
}

}  // namespace mantissa::config::detail
