// trainer.init.optimizer: {Name: {learning_rate | lr, <the optimizer's fields>, params: [...]}}.
// The settings struct's field table says which keys exist and what each takes.
#include <algorithm>
#include <cctype>

#include "config_internal.hpp"
#include "support/number_text.hpp"

namespace mantissa::config::detail {
namespace {

const char* const kNum = "a number";
const char* const kBool = "true or false";
const char* const kInt = "an integer";

std::string optimizer_names_text() {
  std::string s;
  for (std::string_view n : optim::optimizer_names()) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

// The value at `name`, or at its other spelling `also`; both set is an error.
template <class T>
void read_spelled(Reader& r, std::string_view name, std::string_view also, T& value,
                  const char* type_name, std::set<std::string>* set) {
  const std::string key(name), other(also);
  const bool here = r.has(key), there = !other.empty() && r.has(other);
  if (here && there) {
    throw Error(r.key_path(key) + ": also given as " + other + " (the same setting): set one");
  }
  if (!here && !there) return;
  value = r.get<T>(here ? key : other, value, type_name);
  if (set != nullptr) set->insert(key);
}

// Reads every field of `s` present in `r`; `set` (optional) collects the names read.
template <class S>
void read_fields(Reader& r, S& s, std::set<std::string>* set) {
  optim::for_each_field(
      s,
      optim::Overloaded{
          [&](const optim::NumberField<S>& f, double& v) {
            read_spelled(r, f.name, f.also, v, kNum, set);
          },
          [&](const optim::FlagField<S>& f, bool& v) {
            read_spelled(r, f.name, f.also, v, kBool, set);
          },
          [&](const optim::CountField<S>& f, int& v) { read_spelled(r, f.name, {}, v, kInt, set); },
          [&](const optim::PairField<S>& f, double& first, double& second) {
            const std::string key(f.name);
            if (!r.has(key)) return;
            const std::string a(optim::number_name<S>(f.first)), b(optim::number_name<S>(f.second));
            if (r.has(a) || r.has(b)) {
              throw Error(r.key_path(key) + ": sets " + a + " and " + b +
                          ", which are given too: set one spelling");
            }
            const YAML::Node n = r.raw(key);
            if (!n.IsSequence() || n.size() != 2) {
              throw Error(r.key_path(key) + ": expected a list of two numbers [" + a + ", " + b +
                          "]");
            }
            first = Reader::as<double>(n[0], r.key_path(key) + "[0]", kNum);
            second = Reader::as<double>(n[1], r.key_path(key) + "[1]", kNum);
            if (set != nullptr) set->insert({a, b});
          },
      });
}

void validate_at(const optim::OptimizerSettings& s, const std::string& path) {
  try {
    optim::validate(s);
  } catch (const Error& e) {
    throw Error(path + "." + e.what());
  }
}

std::vector<std::string> glob_list(Reader& r) {
  const YAML::Node n = r.raw("params");
  const std::string where = r.key_path("params");
  std::vector<std::string> out;
  if (n && n.IsScalar()) out.push_back(n.Scalar());
  if (n && n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      out.push_back(
          Reader::as<std::string>(n[i], where + "[" + std::to_string(i) + "]", "a glob pattern"));
    }
  }
  if (out.empty()) {
    throw Error(where + ": expected a glob pattern or a list of them (over parameter names)");
  }
  return out;
}

// One `params` entry: globs, a tag, and fields of this optimizer for those parameters.
ParamGroupConfig parse_param_group(const YAML::Node& node, const std::string& path,
                                   const optim::OptimizerSettings& base) {
  Reader r(node, path);
  if (!node || !node.IsMap()) throw Error(path + ": expected {params: <globs>, tag: <name>, ...}");
  ParamGroupConfig g{glob_list(r), r.require<std::string>("tag", "a string"), base, {}, {}};
  if (g.tag.empty()) throw Error(r.key_path("tag") + ": must not be empty");
  if (r.has("adjust_learning_rate")) {
    g.adjust_learning_rate = r.require<double>("adjust_learning_rate", kNum);
    if (!(*g.adjust_learning_rate > 0)) {
      throw Error(r.key_path("adjust_learning_rate") + ": " +
                  support::value_text(*g.adjust_learning_rate) + " must be > 0");
    }
  }
  std::visit([&](auto& s) { read_fields(r, s, &g.fields); }, g.settings);
  r.finish();
  validate_at(g.settings, path);
  return g;
}

}  // namespace

OptimizerConfig parse_optimizer(const YAML::Node& node, const std::string& path) {
  if (!node || !node.IsMap() || node.size() != 1) {
    throw Error(path + ": expected one optimizer, as {AdamW: {learning_rate: ..., ...}} (names: " +
                optimizer_names_text() + ")");
  }
  const std::string key = Reader::key_text(node.begin()->first, path);
  std::string name = key;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::optional<optim::OptimizerSettings> defaults = optim::default_settings(name);
  if (!defaults) {
    throw Error(path + ": unknown name '" + name + "' (expected one of: " + optimizer_names_text() +
                ")");
  }
  OptimizerConfig o{
      *defaults, optim::default_learning_rate(*defaults), false, {}, numerics::Format::float32};
  Reader r(node.begin()->second, path + "." + key);
  const bool long_name = r.has("learning_rate"), short_name = r.has("lr");
  if (long_name && short_name) {
    throw Error(r.key_path("lr") + ": also given as learning_rate (the same setting): set one");
  }
  o.learning_rate_given = long_name || short_name;
  // >= 0: PyTorch's "Invalid learning rate" check.
  o.learning_rate =
      r.get_number(long_name ? "learning_rate" : "lr", o.learning_rate, optim::kNonNegative);
  std::visit([&](auto& s) { read_fields(r, s, nullptr); }, o.settings);
  if (r.has("state_dtype")) {
    const auto text = r.require<std::string>("state_dtype", "a string");
    o.state_format = parse_named(optim::kStateFormatNames, text, r.key_path("state_dtype"));
  }
  if (r.has("params")) {
    const YAML::Node list = r.raw("params");
    const std::string where = r.key_path("params");
    if (list.IsMap()) {
      o.params.push_back(parse_param_group(list, where, o.settings));
    } else if (list.IsSequence()) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        o.params.push_back(
            parse_param_group(list[i], where + "[" + std::to_string(i) + "]", o.settings));
      }
    } else {
      throw Error(where + ": expected a list of {params: <globs>, tag: <name>, ...}");
    }
  }
  r.finish();
  validate_at(o.settings, r.path());
  return o;
}

}  // namespace mantissa::config::detail
