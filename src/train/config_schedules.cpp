// The seeds' scheduler classes in YAML: `schedulers: [{CosineDecayLR: {...}}]`.
#include <cctype>

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

}  // namespace

const char* kScheduleNames =
    "ConstantLR, LinearLR, PolynomialLR, ExponentialLR, InverseExponentialTimeDecayLR, "
    "InverseSquareRootDecayLR, CosineDecayLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, "
    "StepLR, MultiStepLR, MultiplicativeLR, CyclicLR, OneCycleLR, SequentialLR, "
    "PiecewiseConstantLR, ChainedScheduler";

optim::SchedulePtr parse_schedule(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap() || node.size() != 1) {
    throw Error(path + ": expected one scheduler, as {Name: {parameters}} (names: " +
                std::string(kScheduleNames) + ")");
  }
  const std::string name = node.begin()->first.as<std::string>();
  Reader r(node.begin()->second, path + "." + name);
  const char* num = "a number";
  const char* integer = "an integer";
  const char* boolean = "true or false";
  auto init = [&] { return r.require<double>("initial_learning_rate", num); };
  optim::SchedulePtr s;
  try {
    if (name == "ConstantLR") {
      s = optim::constant(r.require<double>("learning_rate", num));
      r.allow({"total_iters"});
    } else if (name == "LinearLR") {
      s = optim::linear(init(), r.require<double>("end_learning_rate", num),
                        r.require<std::int64_t>("total_iters", integer));
    } else if (name == "PolynomialLR") {
      s = optim::polynomial(init(), r.require<double>("end_learning_rate", num),
                            r.require<std::int64_t>("total_iters", integer),
                            r.get<double>("power", 1.0, num), r.get<bool>("cycle", false, boolean));
    } else if (name == "ExponentialLR") {
      s = optim::exponential(init(), r.require<std::int64_t>("total_iters", integer),
                             r.require<double>("decay_rate", num),
                             r.get<bool>("staircase", false, boolean));
    } else if (name == "InverseExponentialTimeDecayLR") {
      s = optim::inverse_exponential_time_decay(init(), r.require<double>("step_exponent", num),
                                                r.require<std::int64_t>("total_iters", integer),
                                                r.require<double>("decay_rate", num),
                                                r.get<bool>("staircase", false, boolean));
    } else if (name == "InverseSquareRootDecayLR") {
      s = optim::inverse_square_root_decay(r.get<double>("initial_learning_rate", 1.0, num),
                                           r.get<double>("scale", 1.0, num),
                                           r.get<std::int64_t>("warmup_steps", 1, integer));
    } else if (name == "CosineDecayLR") {
      s = optim::cosine_decay(init(), r.require<double>("end_learning_rate", num),
                              r.require<std::int64_t>("total_iters", integer));
    } else if (name == "CosineAnnealingLR") {
      s = optim::cosine_annealing(init(), r.require<std::int64_t>("T_max", integer),
                                  r.get<double>("eta_min", 0.0, num));
    } else if (name == "CosineAnnealingWarmRestarts") {
      s = optim::cosine_annealing_warm_restarts(init(), r.require<std::int64_t>("T_0", integer),
                                                r.get<std::int64_t>("T_mult", 1, integer),
                                                r.get<double>("eta_min", 0.0, num));
    } else if (name == "StepLR") {
      s = optim::step_decay(init(), r.require<std::int64_t>("step_size", integer),
                            r.get<double>("gamma", 0.1, num));
    } else if (name == "MultiStepLR") {
      s = optim::multi_step(init(), int_list(r, "milestones"), r.get<double>("gamma", 0.1, num));
    } else if (name == "MultiplicativeLR") {
      s = optim::multiplicative(init(), r.require<double>("coefficient", num));
    } else if (name == "CyclicLR") {
      s = optim::cyclic(r.require<double>("base_lr", num), r.require<double>("max_lr", num),
                        r.require<std::int64_t>("step_size_up", integer),
                        r.get<std::int64_t>("step_size_down", 0, integer),
                        r.get<std::string>("mode", "triangular", "a string"),
                        r.get<double>("gamma", 1.0, num));
    } else if (name == "OneCycleLR") {
      const double max_lr = r.require<double>("max_lr", num);
      const double initial = r.get<double>("initial_learning_rate", max_lr / 25.0, num);
      const double final_lr = r.get<double>("final_learning_rate", initial / 1e4, num);
      s = optim::one_cycle(max_lr, r.require<std::int64_t>("total_steps", integer),
                           r.get<double>("pct_start", 0.3, num),
                           r.get<std::string>("anneal_strategy", "cos", "a string"),
                           max_lr / initial, initial / final_lr,
                           r.get<bool>("three_phase", false, boolean));
    } else if (name == "SequentialLR") {
      s = optim::sequential(schedule_list(r, "schedulers"), int_list(r, "milestones"));
    } else if (name == "PiecewiseConstantLR") {
      s = optim::piecewise_constant(double_list(r, "learning_rates"), int_list(r, "milestones"));
    } else if (name == "ChainedScheduler") {
      s = optim::chained(schedule_list(r, "schedulers"));
    } else {
      throw Error(path + ": unknown scheduler '" + name + "' (expected one of: " + kScheduleNames +
                  ")");
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);  // the schedule's own check, placed at its key
  }
  r.finish();
  return s;
}

}  // namespace mantissa::train::detail
