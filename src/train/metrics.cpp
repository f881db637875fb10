#include "mantissa/train/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mantissa/error.hpp"

namespace mantissa::train {
namespace {

using json = nlohmann::json;

// The keys, written and read here only.
constexpr const char* kRun = "run";
constexpr const char* kStep = "step";
constexpr const char* kEvalStep = "eval_step";
constexpr const char* kSkippedStep = "skipped_step";
constexpr const char* kLoss = "loss";
constexpr const char* kLr = "lr";
constexpr const char* kLossScale = "loss_scale";
constexpr const char* kSkippedSteps = "skipped_steps";
constexpr const char* kGradNorm = "grad_norm";
constexpr const char* kPeakRss = "peak_rss_mib";
constexpr const char* kPerplexity = "perplexity";
constexpr const char* kAccuracy = "accuracy";
constexpr const char* kBatches = "steps";
constexpr const char* kOverflowed = "overflowed";

std::string per_second_key(std::string_view unit) {
  return std::string(unit) + "_per_s";
}

const char* type_word(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

// The fields of one record, read with errors that name the file, the line and the key.
class Fields {
 public:
  Fields(const json& object, std::string where, const char* kind)
      : j_(object), where_(std::move(where)), kind_(kind) {}

  const json& required(const std::string& key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail("the " + std::string(kind_) + " record has no '" + key + "' field");
    return *it;
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  // A number; null (how non-finite values are written) reads as NaN.
  double number(const std::string& key) const {
    const json& v = required(key);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) mistyped(key, v, "a number");
    return v.get<double>();
  }
  std::optional<double> optional_number(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return number(key);
  }
  std::int64_t integer(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_number_integer()) mistyped(key, v, "an integer");
    return v.get<std::int64_t>();
  }
  std::string text(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_string()) mistyped(key, v, "a string");
    return v.get<std::string>();
  }
  std::vector<std::string> texts(const std::string& key) const {
    const json& v = required(key);
    bool ok = v.is_array();
    for (const json& e : v) ok = ok && e.is_string();
    if (!ok) mistyped(key, v, "a list of strings");
    return v.get<std::vector<std::string>>();
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(where_ + ": " + what); }

 private:
  [[noreturn]] void mistyped(const std::string& key, const json& v, const char* expected) const {
    fail("'" + key + "' is " + type_word(v) + ", expected " + expected);
  }
  const json& j_;
  std::string where_;
  const char* kind_;
};

RunRecord read_run(const Fields& f) {
  RunRecord r;
  const std::string format = f.text("format");
  const std::optional<numerics::Format> parsed = numerics::parse_format(format);
  if (!parsed) f.fail("'format' is '" + format + "', not a number format");
  r.format = *parsed;
  const std::string scaling = f.text("loss_scaling");
  const std::optional<LossScalingMode> mode = find_named(kLossScalingModeNames, scaling);
  if (!mode) {
    f.fail("'loss_scaling' is '" + scaling +
           "' (expected one of: " + names_of(kLossScalingModeNames) + ")");
  }
  r.loss_scaling = *mode;
  r.model = f.text("model");
  r.parameters = f.integer("parameters");
  r.unit = f.text("unit");
  r.items_per_step = f.integer("items_per_step");
  r.start_step = f.integer("start_step");
  r.max_steps = f.integer("max_steps");
  r.seed = static_cast<std::uint64_t>(f.integer("seed"));
  r.cpu = f.text("cpu");
  const json& rows = f.required("settings");
  bool ok = rows.is_array();
  for (const json& row : rows)
    ok = ok && row.is_array() && row.size() == 2 && row[0].is_string() && row[1].is_string();
  if (!ok) f.fail("'settings' is not a list of [name, value] string pairs");
  for (const json& row : rows)
    r.settings.emplace_back(row[0].get<std::string>(), row[1].get<std::string>());
  return r;
}

template <class Record>
void drop_after(std::vector<Record>& v, std::int64_t step) {
  v.erase(std::remove_if(v.begin(), v.end(), [&](const Record& r) { return r.step > step; }),
          v.end());
}

}  // namespace

std::string metrics_line(const RunRecord& r) {
  json rows = json::array();
  for (const auto& [name, value] : r.settings) rows.push_back({name, value});
  const json run{{"format", numerics::name(r.format)},
                 {"loss_scaling", name_of(kLossScalingModeNames, r.loss_scaling)},
                 {"model", r.model},
                 {"parameters", r.parameters},
                 {"unit", r.unit},
                 {"items_per_step", r.items_per_step},
                 {"start_step", r.start_step},
                 {"max_steps", r.max_steps},
                 {"seed", r.seed},
                 {"cpu", r.cpu},
                 {"settings", rows}};
  return json{{kRun, run}}.dump();
}

std::string metrics_line(const WindowRecord& r, std::string_view unit) {
  json j{{kStep, r.step},
         {kLoss, r.loss},
         {kLr, r.learning_rate},
         {kLossScale, r.loss_scale},
         {kSkippedSteps, r.skipped_steps},
         {kGradNorm, r.grad_norm},
         {per_second_key(unit), r.items_per_second}};
  if (r.peak_rss_mib) j[kPeakRss] = *r.peak_rss_mib;
  return j.dump();
}

std::string metrics_line(const EvalRecord& r) {
  json j{{kEvalStep, r.step}, {kLoss, r.loss}, {kBatches, r.batches}};
  if (r.perplexity) j[kPerplexity] = *r.perplexity;
  if (r.accuracy) j[kAccuracy] = *r.accuracy;
  return j.dump();
}

std::string metrics_line(const SkipRecord& r) {
  return json{{kSkippedStep, r.step}, {kLossScale, r.loss_scale}, {kOverflowed, r.overflowed}}
      .dump();
}

RunLog parse_metrics(std::string_view text, const std::string& source) {
  RunLog log;
  log.source = source;
  bool have_run = false;
  std::size_t line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = source + ":" + std::to_string(line_number);
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      throw Error(where + ": not one JSON object (a torn or truncated line?)");
    }
    if (j.contains(kRun)) {
      const json& run = j.at(kRun);
      if (!run.is_object())
        throw Error(where + ": 'run' is " + type_word(run) + ", expected an object");
      log.run = read_run(Fields(run, where, "run"));
      have_run = true;
      drop_after(log.windows, log.run.start_step);
      drop_after(log.evals, log.run.start_step);
      drop_after(log.skips, log.run.start_step);
      continue;
    }
    if (!have_run) {
      throw Error(where + ": a record before the run record (every run writes one first; " +
                  "this file was not written by mantissa train, or by an older version)");
    }
    if (j.contains(kStep)) {
      const Fields f(j, where, "step");
      WindowRecord w;
      w.step = f.integer(kStep);
      w.loss = f.number(kLoss);
      w.learning_rate = f.number(kLr);
      w.loss_scale = f.number(kLossScale);
      w.skipped_steps = f.integer(kSkippedSteps);
      w.grad_norm = f.number(kGradNorm);
      w.items_per_second = f.number(per_second_key(log.run.unit));
      w.peak_rss_mib = f.optional_number(kPeakRss);
      log.windows.push_back(w);
    } else if (j.contains(kEvalStep)) {
      const Fields f(j, where, "eval_step");
      EvalRecord e;
      e.step = f.integer(kEvalStep);
      e.loss = f.number(kLoss);
      e.batches = f.integer(kBatches);
      e.perplexity = f.optional_number(kPerplexity);
      e.accuracy = f.optional_number(kAccuracy);
      log.evals.push_back(e);
    } else if (j.contains(kSkippedStep)) {
      const Fields f(j, where, "skipped_step");
      SkipRecord s;
      s.step = f.integer(kSkippedStep);
      s.loss_scale = f.number(kLossScale);
      s.overflowed = f.texts(kOverflowed);
      log.skips.push_back(s);
    } else {
      throw Error(where + ": not a run, step, eval_step or skipped_step record");
    }
  }
  if (!have_run) throw Error(source + ": no run record (is this a mantissa metrics.jsonl?)");
  return log;
}

RunLog read_run_log(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open the metrics file (is " + run_dir + " a run directory?)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path + ": cannot read the metrics file");
  return parse_metrics(text.str(), path);
}

}  // namespace mantissa::train
