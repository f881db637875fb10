// The seeds' scheduler classes in YAML: `schedulers: [{CosineDecayLR: {...}}]`.
#include <algorithm>
#include <array>

#include "config_internal.hpp"

namespace mantissa::train::detail {
namespace {

std::vector<std::int64_t> int_list(Reader& r, const std::string& key) {
  std::vector<std::int64_t> out;
  const YAML::Node n = r.raw(key);
  if (!n || !n.IsSequence()) throw Error(r.key_path(key) + ": expected a list of integers");
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(Reader::as<std::int64_t>(n[i], r.key_path(key) + "[" + std::to_string(i) + "]",
                                           "an integer"));
  }
  return out;
}

std::vector<double> double_list(Reader& r, const std::string& key) {
  std::vector<double> out;
  const YAML::Node n = r.raw(key);
  if (!n || !n.IsSequence()) throw Error(r.key_path(key) + ": expected a list of numbers");
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(
        Reader::as<double>(n[i], r.key_path(key) + "[" + std::to_string(i) + "]", "a number"));
  }
  return out;
}

std::vector<optim::SchedulePtr> schedule_list(Reader& r, const std::string& key) {
  const YAML::Node n = r.raw(key);
  if (!n || !n.IsSequence()) throw Error(r.key_path(key) + ": expected a list of schedulers");
  std::vector<optim::SchedulePtr> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(parse_schedule(n[i], r.key_path(key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

const char* const kNum = "a number";
const char* const kInt = "an integer";
const char* const kBool = "true or false";

double initial(Reader& r) {
  return r.require<double>("initial_learning_rate", kNum);
}
double number(Reader& r, const char* key) {
  return r.require<double>(key, kNum);
}
std::int64_t integer(Reader& r, const char* key) {
  return r.require<std::int64_t>(key, kInt);
}
// One scheduler class of the seeds' system: its YAML name, and how its parameters are read
// and handed to the optim factory that builds it.
struct ScheduleEntry {
  optim::ScheduleKind kind;
  const char* name;
  optim::SchedulePtr (*parse)(Reader& r);
};

constexpr std::array<ScheduleEntry, optim::kScheduleKindCount> kSchedules = {{
    {optim::ScheduleKind::constant, "ConstantLR",
     [](Reader& r) {
       r.allow({"total_iters"});
       return optim::constant(number(r, "learning_rate"));
     }},
    {optim::ScheduleKind::linear, "LinearLR",
     [](Reader& r) {
       return optim::linear(initial(r), number(r, "end_learning_rate"), integer(r, "total_iters"));
     }},
    {optim::ScheduleKind::polynomial, "PolynomialLR",
     [](Reader& r) {
       return optim::polynomial(initial(r), number(r, "end_learning_rate"),
                                integer(r, "total_iters"), r.get<double>("power", 1.0, kNum),
                                r.get<bool>("cycle", false, kBool));
     }},
    {optim::ScheduleKind::exponential, "ExponentialLR",
     [](Reader& r) {
       return optim::exponential(initial(r), integer(r, "total_iters"), number(r, "decay_rate"),
                                 r.get<bool>("staircase", false, kBool));
     }},
    {optim::ScheduleKind::inverse_exponential_time_decay, "InverseExponentialTimeDecayLR",
     [](Reader& r) {
       return optim::inverse_exponential_time_decay(
           initial(r), number(r, "step_exponent"), integer(r, "total_iters"),
           number(r, "decay_rate"), r.get<bool>("staircase", false, kBool));
     }},
    {optim::ScheduleKind::inverse_square_root_decay, "InverseSquareRootDecayLR",
     [](Reader& r) {
       return optim::inverse_square_root_decay(r.get<double>("initial_learning_rate", 1.0, kNum),
                                               r.get<double>("scale", 1.0, kNum),
                                               r.get<std::int64_t>("warmup_steps", 1, kInt));
     }},
    {optim::ScheduleKind::cosine_decay, "CosineDecayLR",
     [](Reader& r) {
       return optim::cosine_decay(initial(r), number(r, "end_learning_rate"),
                                  integer(r, "total_iters"));
     }},
    {optim::ScheduleKind::cosine_annealing, "CosineAnnealingLR",
     [](Reader& r) {
       return optim::cosine_annealing(initial(r), integer(r, "T_max"),
                                      r.get<double>("eta_min", 0.0, kNum));
     }},
    {optim::ScheduleKind::cosine_annealing_warm_restarts, "CosineAnnealingWarmRestarts",
     [](Reader& r) {
       return optim::cosine_annealing_warm_restarts(initial(r), integer(r, "T_0"),
                                                    r.get<std::int64_t>("T_mult", 1, kInt),
                                                    r.get<double>("eta_min", 0.0, kNum));
     }},
    {optim::ScheduleKind::step_decay, "StepLR",
     [](Reader& r) {
       return optim::step_decay(initial(r), integer(r, "step_size"),
                                r.get<double>("gamma", 0.1, kNum));
     }},
    {optim::ScheduleKind::multi_step, "MultiStepLR",
     [](Reader& r) {
       return optim::multi_step(initial(r), int_list(r, "milestones"),
                                r.get<double>("gamma", 0.1, kNum));
     }},
    {optim::ScheduleKind::multiplicative, "MultiplicativeLR",
     [](Reader& r) { return optim::multiplicative(initial(r), number(r, "coefficient")); }},
    {optim::ScheduleKind::cyclic, "CyclicLR",
     [](Reader& r) {
       return optim::cyclic(
           number(r, "base_lr"), number(r, "max_lr"), integer(r, "step_size_up"),
           r.get<std::int64_t>("step_size_down", 0, kInt),
           r.get_named("mode", optim::CyclicMode::triangular, optim::kCyclicModeNames),
           r.get<double>("gamma", 1.0, kNum));
     }},
    {optim::ScheduleKind::one_cycle, "OneCycleLR",
     [](Reader& r) {
       const double max_lr = number(r, "max_lr");
       const double first = r.get<double>("initial_learning_rate", max_lr / 25.0, kNum);
       const double final_lr = r.get<double>("final_learning_rate", first / 1e4, kNum);
       return optim::one_cycle(
           max_lr, integer(r, "total_steps"), r.get<double>("pct_start", 0.3, kNum),
           r.get_named("anneal_strategy", optim::Anneal::cos, optim::kAnnealNames), max_lr / first,
           first / final_lr, r.get<bool>("three_phase", false, kBool));
     }},
    {optim::ScheduleKind::sequential, "SequentialLR",
     [](Reader& r) {
       return optim::sequential(schedule_list(r, "schedulers"), int_list(r, "milestones"));
     }},
    {optim::ScheduleKind::piecewise_constant, "PiecewiseConstantLR",
     [](Reader& r) {
       return optim::piecewise_constant(double_list(r, "learning_rates"),
                                        int_list(r, "milestones"));
     }},
    {optim::ScheduleKind::chained, "ChainedScheduler",
     [](Reader& r) { return optim::chained(schedule_list(r, "schedulers")); }},
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

std::string schedule_names() {
  std::string out;
  for (const ScheduleEntry& e : kSchedules) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace

optim::SchedulePtr parse_schedule(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap() || node.size() != 1) {
    throw Error(path + ": expected one scheduler, as {Name: {parameters}} (names: " +
                schedule_names() + ")");
  }
  const std::string name = node.begin()->first.as<std::string>();
  const auto entry = std::find_if(kSchedules.begin(), kSchedules.end(),
                                  [&](const ScheduleEntry& e) { return e.name == name; });
  if (entry == kSchedules.end()) {
    throw Error(path + ": unknown scheduler '" + name + "' (expected one of: " + schedule_names() +
                ")");
  }
  Reader r(node.begin()->second, path + "." + name);
  optim::SchedulePtr s;
  try {
    s = entry->parse(r);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);  // the schedule's own check, placed at its key
  }
  r.finish();
  return s;
}

}  // namespace mantissa::train::detail
