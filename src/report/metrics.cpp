#include "mantissa/report/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "mantissa/error.hpp"
#include "mantissa/read_file.hpp"
#include "precision_stats_record.hpp"
#include "record_fields.hpp"
#include "settings_change.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::report {
namespace {

using namespace detail;

// The record kinds' first keys.
constexpr const char* kRun = "run";
constexpr const char* kStep = "step";
constexpr const char* kEvalStep = "eval_step";
constexpr const char* kSkippedStep = "skipped_step";
constexpr const char* kRoutes = "routes";
constexpr const char* kFallbackStep = "fallback_step";
constexpr const char* kEnd = "end";

std::string per_second_key(std::string_view unit) {
  return std::string(unit) + "_per_s";
}

constexpr auto kWindowFields = std::make_tuple(
    Field<WindowRecord, std::int64_t>{kStep, &WindowRecord::step},
    Field<WindowRecord, double>{"loss", &WindowRecord::loss},
    Field<WindowRecord, double>{"lr", &WindowRecord::learning_rate},
    Field<WindowRecord, std::optional<double>>{"loss_scale", &WindowRecord::loss_scale},
    Field<WindowRecord, std::int64_t>{"skipped_steps", &WindowRecord::skipped_steps},
    Field<WindowRecord, double>{"grad_norm", &WindowRecord::grad_norm},
    Field<WindowRecord, std::optional<double>>{"peak_rss_mib", &WindowRecord::peak_rss_mib});
// ... and items_per_second, under "<unit>_per_s" (tokens_per_s, samples_per_s).

constexpr auto kEvalFields =
    std::make_tuple(Field<EvalRecord, std::int64_t>{kEvalStep, &EvalRecord::step},
                    Field<EvalRecord, double>{"loss", &EvalRecord::loss},
                    Field<EvalRecord, std::int64_t>{"steps", &EvalRecord::batches},
                    Field<EvalRecord, std::optional<double>>{"perplexity", &EvalRecord::perplexity},
                    Field<EvalRecord, std::optional<double>>{"accuracy", &EvalRecord::accuracy});

constexpr auto kSkipFields = std::make_tuple(
    Field<SkipRecord, std::int64_t>{kSkippedStep, &SkipRecord::step},
    Field<SkipRecord, double>{"loss_scale", &SkipRecord::loss_scale},
    Field<SkipRecord, std::vector<std::string>>{"overflowed", &SkipRecord::overflowed});

constexpr auto kFallbackFields =
    std::make_tuple(Field<FallbackRecord, std::int64_t>{kFallbackStep, &FallbackRecord::step},
                    Field<FallbackRecord, std::string>{"reason", &FallbackRecord::reason});
// ... and from, to (format names).

constexpr auto kOutcomeFields = std::make_tuple(
    Field<OutcomeRecord, std::int64_t>{kEnd, &OutcomeRecord::step},
    Field<OutcomeRecord, std::int64_t>{"skipped_steps", &OutcomeRecord::skipped_steps},
    Field<OutcomeRecord, std::optional<std::int64_t>>{"last_skipped_step",
                                                      &OutcomeRecord::last_skipped_step},
    Field<OutcomeRecord, std::string>{"signal", &OutcomeRecord::signal},
    Field<OutcomeRecord, std::string>{"checkpoint", &OutcomeRecord::checkpoint},
    Field<OutcomeRecord, std::string>{"message", &OutcomeRecord::message});
// ... and outcome (a name).

constexpr const char* kInterleaved = "interleaved_throughput";
constexpr auto kThroughputFields = std::make_tuple(
    Field<ThroughputRecord, std::string>{kInterleaved, &ThroughputRecord::run},
    Field<ThroughputRecord, std::string>{"unit", &ThroughputRecord::unit},
    Field<ThroughputRecord, double>{"items_per_s", &ThroughputRecord::items_per_second},
    Field<ThroughputRecord, double>{"slowest_items_per_s", &ThroughputRecord::slowest},
    Field<ThroughputRecord, double>{"fastest_items_per_s", &ThroughputRecord::fastest},
    Field<ThroughputRecord, std::int64_t>{"steps", &ThroughputRecord::steps});

constexpr auto kRunFields =
    std::make_tuple(Field<RunRecord, std::string>{"model", &RunRecord::model},
                    Field<RunRecord, std::int64_t>{"parameters", &RunRecord::parameters},
                    Field<RunRecord, std::string>{"unit", &RunRecord::unit},
                    Field<RunRecord, std::int64_t>{"items_per_step", &RunRecord::items_per_step},
                    Field<RunRecord, std::int64_t>{"start_step", &RunRecord::start_step},
                    Field<RunRecord, std::int64_t>{"max_steps", &RunRecord::max_steps},
                    Field<RunRecord, std::uint64_t>{"seed", &RunRecord::seed},
                    Field<RunRecord, std::string>{"cpu", &RunRecord::cpu});
// ... and format, loss_scaling (names) and settings ([name, value] pairs).

// A list of [name, value] string pairs.
std::vector<SettingRow> read_rows(const Fields& f, const char* key) {
  const json& rows = f.required(key);
  bool ok = rows.is_array();
  for (const json& row : rows)
    ok = ok && row.is_array() && row.size() == 2 && row[0].is_string() && row[1].is_string();
  if (!ok) f.fail("'" + std::string(key) + "' is not a list of [name, value] string pairs");
  std::vector<SettingRow> out;
  for (const json& row : rows)
    out.emplace_back(row[0].get<std::string>(), row[1].get<std::string>());
  return out;
}

constexpr const char* kSameBits = "same_bits_opt_levels";

// same_bits_opt_levels: a list of precision_opt_level values (0, 1, 2); none when absent.
std::vector<int> read_levels(const Fields& f) {
  if (!f.has(kSameBits)) return {};
  const json& v = f.required(kSameBits);
  bool ok = v.is_array();
  for (const json& e : v)
    ok = ok && e.is_number_integer() && e.get<std::int64_t>() >= 0 && e.get<std::int64_t>() <= 2;
  if (!ok) f.fail("'" + std::string(kSameBits) + "' is not a list of levels 0, 1, 2");
  return v.get<std::vector<int>>();
}

void write_levels(json& j, const std::vector<int>& levels) {
  if (!levels.empty()) j[kSameBits] = levels;
}

RunRecord read_run(const Fields& f) {
  RunRecord r = read_fields<RunRecord>(f, kRunFields);
  r.format = f.format("format");
  if (f.has("fp8")) {
    const json& v = f.required("fp8");
    if (!v.is_boolean())
      f.fail("'fp8' is " + std::string(type_word(v)) + ", expected true or false");
    r.fp8 = v.get<bool>();
  }
  r.loss_scaling = f.named("loss_scaling", kLossScalingModeNames);
  r.same_bits_opt_levels = read_levels(f);
  r.settings = read_rows(f, "settings");
  if (f.has("recipe")) {
    r.recipe = name_of(precision::kRecipeNames, f.named("recipe", precision::kRecipeNames));
  }
  if (f.has("layers")) r.layers = read_rows(f, "layers");
  return r;
}

// One product of a routes record: its key and rates as the route line that
// kernels::parse_route_record_line checks, and its source.
kernels::RouteRecord read_route(const Fields& f, const json& p, std::size_t index) {
  const std::string what = "products[" + std::to_string(index) + "]";
  const auto need = [&](const char* key, bool ok) {
    if (!p.contains(key) || !ok) f.fail("'" + what + "." + key + "' is missing or mistyped");
  };
  need("m", p.is_object() && p.contains("m") && p["m"].is_number_integer());
  need("n", p.contains("n") && p["n"].is_number_integer());
  need("k", p.contains("k") && p["k"].is_number_integer());
  for (const char* key : {"trans", "format", "threads", "route", "source"}) {
    need(key, p.contains(key) && p[key].is_string());
  }
  need("passes", p.contains("passes") && p["passes"].is_number_integer());
  need("gflops", p.contains("gflops") && p["gflops"].is_object());
  std::ostringstream line;
  // A convolution's product: its kind and shape first ("conv_fwd 128 16 14 14 32 3 3 1 1 bias").
  if (p.contains("product")) {
    need("product", p["product"].is_string());
    line << p["product"].get<std::string>() << ' ';
  }
  line << p["m"].get<std::int64_t>() << ' ' << p["n"].get<std::int64_t>() << ' '
       << p["k"].get<std::int64_t>() << ' ' << p["trans"].get<std::string>() << ' '
       << p["format"].get<std::string>() << ' ' << p["passes"].get<std::int64_t>() << ' '
       << p["threads"].get<std::string>() << ' ' << p["route"].get<std::string>();
  // Rates in the table's order (the RouteRecord's index); automatic is never measured.
  for (const auto& named : precision::kMatmulRouteNames) {
    const auto it = p["gflops"].find(std::string(named.name));
    line << ' ' << (it != p["gflops"].end() && it->is_number() ? it->get<double>() : 0.0);
  }
  std::optional<kernels::RouteRecord> r = kernels::parse_route_record_line(line.str());
  const std::optional<kernels::RouteSource> source =
      find_named(kernels::kRouteSourceNames, p["source"].get<std::string>());
  if (!r || !source) f.fail("'" + what + "' is not a product with a route and its rates");
  r->source = *source;
  return *r;
}

RoutesRecord read_routes(const Fields& f) {
  RoutesRecord r;
  r.step = f.integer(kRoutes);
  const json& products = f.required("products");
  if (!products.is_array()) f.fail("'products' is not a list");
  for (std::size_t i = 0; i < products.size(); ++i) {
    r.products.push_back(read_route(f, products[i], i));
  }
  r.same_bits_opt_levels = read_levels(f);
  return r;
}

template <class Record>
void drop_after(std::vector<Record>& v, std::int64_t step) {
  v.erase(std::remove_if(v.begin(), v.end(), [&](const Record& r) { return r.step > step; }),
          v.end());
}

}  // namespace

std::string metrics_line(const RunRecord& r) {
  json run = write_fields(r, kRunFields);
  run["format"] = numerics::name(r.format);
  if (r.fp8) run["fp8"] = true;
  run["loss_scaling"] = name_of(kLossScalingModeNames, r.loss_scaling);
  write_levels(run, r.same_bits_opt_levels);
  run["settings"] = json::array();
  for (const auto& [name, value] : r.settings) run["settings"].push_back({name, value});
  if (!r.recipe.empty()) {
    run["recipe"] = r.recipe;
    run["layers"] = json::array();
    for (const auto& [layer, what] : r.layers) run["layers"].push_back({layer, what});
  }
  return json{{kRun, run}}.dump();
}

std::string metrics_line(const WindowRecord& r, std::string_view unit) {
  json j = write_fields(r, kWindowFields);
  j[per_second_key(unit)] = r.items_per_second;
  if (r.fp8) {
    j["fp8_overflows"] = r.fp8->overflows;
    j["fp8_underflows"] = r.fp8->underflows;
    json tensors = json::object();
    for (const precision::Fp8TensorCounts& c : r.fp8->tensors) {
      tensors[c.tensor] = {{"overflows", c.overflows}, {"underflows", c.underflows}};
    }
    j["fp8_tensors"] = tensors;
  }
  return j.dump();
}

std::string metrics_line(const EvalRecord& r) {
  return write_fields(r, kEvalFields).dump();
}

std::string metrics_line(const SkipRecord& r) {
  json j = write_fields(r, kSkipFields);
  if (r.first_nonfinite) {
    const autograd::NonfiniteOrigin& o = *r.first_nonfinite;
    j["first_nonfinite"] = {{"op", o.op},
                            {"layer", o.layer},
                            {"gradient", name_of(autograd::kNonfiniteGradientNames, o.gradient)}};
  }
  return j.dump();
}

std::string metrics_line(const RoutesRecord& r) {
  json products = json::array();
  for (const kernels::RouteRecord& rec : r.products) {
    const kernels::GemmKey& k = rec.key;
    json rates = json::object();
    for (const auto& named : precision::kMatmulRouteNames) {
      const double g = rec.gflops[static_cast<std::size_t>(named.value)];
      if (g > 0) rates[std::string(named.name)] = g;
    }
    products.push_back({{"m", k.m},
                        {"n", k.n},
                        {"k", k.k},
                        {"trans", std::string(k.trans_a ? "T" : "N") + (k.trans_b ? "T" : "N")},
                        {"format", numerics::name(k.format)},
                        {"passes", k.passes},
                        {"threads", k.all_threads ? "all" : "thread"},
                        {"route", precision::route_name(rec.route)},
                        {"source", name_of(kernels::kRouteSourceNames, rec.source)},
                        {"gflops", rates}});
    if (k.kind != kernels::ProductKind::matmul) {
      products.back()["product"] = kernels::product_prefix(k);
    }
  }
  json j{{kRoutes, r.step}, {"products", products}};
  write_levels(j, r.same_bits_opt_levels);
  return j.dump();
}

std::string metrics_line(const FallbackRecord& r) {
  json j = write_fields(r, kFallbackFields);
  j["from"] = numerics::name(r.from);
  j["to"] = numerics::name(r.to);
  return j.dump();
}

std::string metrics_line(const OutcomeRecord& r) {
  json j = write_fields(r, kOutcomeFields);
  j["outcome"] = name_of(kRunOutcomeNames, r.outcome);
  return j.dump();
}

namespace {

// No line mantissa writes comes near this (a sampled step of 1,000 rounding sites is some
// 250 KB): a longer one is damage, and parsing one held some 7 bytes of memory per byte of it
// (a torn line of 1 GB: 7 GB and 30 s, before its error).
constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

// Calls each(object, "<source>:<line>") for every non-blank line of JSON-lines text; a line
// that is not one JSON object, or longer than kMaxLineBytes, is an error naming it.
template <class Each>
void for_each_object(std::string_view text, const std::string& source, Each each) {
  std::size_t line_number = 0, pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = source + ":" + std::to_string(line_number);
    if (line.size() > kMaxLineBytes) {
      throw Error(where + ": a line of " + std::to_string(line.size()) +
                  " bytes, longer than any record (at most " + std::to_string(kMaxLineBytes) +
                  "; a damaged file?)");
    }
    std::string reason;
    const json j = support::parse_untrusted_json(line, where, /*allow_invalid=*/true,
                                                 support::kMaxJsonDepth, &reason);
    // The parser's "number overflow parsing '<number>'" names the number: a record written
    // by hand or by another program, not a torn one.
    const std::size_t overflow = reason.find("number overflow");
    if (j.is_discarded() && overflow != std::string::npos) {
      const std::string said = reason.substr(overflow);
      throw Error(where + ": a number past a double's range (" +
                  escape_controls(std::string_view(said).substr(0, 80)) +
                  (said.size() > 80 ? "...)" : ")"));
    }
    if (j.is_discarded() || !j.is_object()) {
      throw Error(where + ": not one JSON object (a torn or truncated line?)");
    }
    each(j, where);
  }
}

FallbackRecord read_fallback(const Fields& f) {
  FallbackRecord r = read_fields<FallbackRecord>(f, kFallbackFields);
  r.from = f.format("from");
  r.to = f.format("to");
  return r;
}

OutcomeRecord read_outcome(const Fields& f) {
  OutcomeRecord r = read_fields<OutcomeRecord>(f, kOutcomeFields);
  r.outcome = f.named("outcome", kRunOutcomeNames);
  return r;
}

// A window's fp8 counts: the totals and fp8_tensors {name: {overflows, underflows}}.
precision::Fp8WindowCounts read_fp8_counts(const Fields& f) {
  precision::Fp8WindowCounts c{f.integer("fp8_overflows"), f.integer("fp8_underflows"), {}};
  const json& tensors = f.required("fp8_tensors");
  if (!tensors.is_object())
    f.fail("'fp8_tensors' is " + std::string(type_word(tensors)) + ", expected an object");
  for (const auto& [name, counts] : tensors.items()) {
    if (!counts.is_object() || !counts.contains("overflows") || !counts.contains("underflows") ||
        !counts.at("overflows").is_number_integer() ||
        !counts.at("underflows").is_number_integer()) {
      f.fail("fp8_tensors['" + name + "'] is not {overflows: integer, underflows: integer}");
    }
    c.tensors.push_back({name, counts.at("overflows").get<std::int64_t>(),
                         counts.at("underflows").get<std::int64_t>()});
  }
  return c;
}

// A skipped step's first_nonfinite: {"op", "layer", "gradient"}.
autograd::NonfiniteOrigin read_origin(const Fields& f) {
  const json& o = f.required("first_nonfinite");
  for (const char* key : {"op", "layer", "gradient"}) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string()) {
      f.fail(std::string("'first_nonfinite.") + key + "' is missing or not a string");
    }
  }
  const std::string word = o["gradient"].get<std::string>();
  const auto gradient = find_named(autograd::kNonfiniteGradientNames, word);
  if (!gradient) {
    f.fail("'first_nonfinite.gradient' is '" + word +
           "' (expected one of: " + names_of(autograd::kNonfiniteGradientNames) + ")");
  }
  return {o["op"].get<std::string>(), o["layer"].get<std::string>(), *gradient};
}

}  // namespace

RunLog parse_metrics(std::string_view text, const std::string& source) {
  RunLog log;
  log.source = source;
  bool have_run = false;
  std::vector<RunRecord> parts;  // the run records of the history that leads to now
  // Within a run (from one run record to the next) training goes forward: each step and
  // skipped_step record comes after the run's start step and after the one before it.
  std::int64_t last_window = 0, last_skip = 0;
  const auto check_forward = [&](const Fields& f, const char* key, std::int64_t step,
                                 std::int64_t& last) {
    if (step <= last) {
      f.fail("'" + std::string(key) + "' " + std::to_string(step) + " does not come after " +
             (last == log.run.start_step ? "the run's start step " : "the one before, ") +
             std::to_string(last) +
             " (steps only go forward within a run; a resumed run starts with a run record)");
    }
    last = step;
  };
  for_each_object(text, source, [&](const json& j, const std::string& where) {
    if (j.contains(kRun)) {
      const json& run = j.at(kRun);
      if (!run.is_object())
        throw Error(where + ": 'run' is " + type_word(run) + ", expected an object");
      RunRecord next = read_run(Fields(run, where, "run"));
      // The part in force at next's start step: parts that started there or later are
      // superseded (a resume from an earlier checkpoint; a fresh run supersedes them all).
      while (!parts.empty() && parts.back().start_step >= next.start_step) parts.pop_back();
      drop_after(log.settings_changes, next.start_step);
      if (!parts.empty()) {
        SettingsChange c = settings_change(parts.back(), log.fallbacks, next);
        if (!c.changed.empty()) log.settings_changes.push_back(std::move(c));
      }
      parts.push_back(next);
      log.run = std::move(next);
      have_run = true;
      drop_after(log.windows, log.run.start_step);
      drop_after(log.evals, log.run.start_step);
      drop_after(log.skips, log.run.start_step);
      drop_after(log.routes, log.run.start_step);
      drop_after(log.precision_stats, log.run.start_step);
      drop_after(log.fallbacks, log.run.start_step);
      log.outcome.reset();  // the run goes on: how an earlier part ended is history
      last_window = last_skip = log.run.start_step;
      return;
    }
    // An evaluation may come first: `mantissa eval` of a checkpoint in a directory no
    // training wrote to yet.
    if (!have_run && !j.contains(kEvalStep)) {
      throw Error(where + ": a record before the run record (every run writes one first; " +
                  "this file was not written by mantissa train, or by an older version)");
    }
    if (j.contains(kStep)) {
      const Fields f(j, where, kStep);
      log.windows.push_back(read_fields<WindowRecord>(f, kWindowFields));
      WindowRecord& w = log.windows.back();
      check_forward(f, kStep, w.step, last_window);
      w.items_per_second = f.number(per_second_key(log.run.unit));
      // Rates, norms and sizes are never negative (NaN: written as null, not finite).
      for (const auto& [key, v] :
           {std::pair<std::string, double>{per_second_key(log.run.unit), w.items_per_second},
            {"grad_norm", w.grad_norm},
            {"peak_rss_mib", w.peak_rss_mib.value_or(0)}}) {
        if (v < 0) f.fail("'" + key + "' is negative");
      }
      if (f.has("fp8_overflows")) log.windows.back().fp8 = read_fp8_counts(f);
    } else if (j.contains(kEvalStep)) {
      log.evals.push_back(read_fields<EvalRecord>(Fields(j, where, kEvalStep), kEvalFields));
    } else if (j.contains(kSkippedStep)) {
      const Fields f(j, where, kSkippedStep);
      log.skips.push_back(read_fields<SkipRecord>(f, kSkipFields));
      check_forward(f, kSkippedStep, log.skips.back().step, last_skip);
      if (f.has("first_nonfinite")) log.skips.back().first_nonfinite = read_origin(f);
    } else if (j.contains(kRoutes)) {
      log.routes.push_back(read_routes(Fields(j, where, kRoutes)));
    } else if (j.contains(kPrecisionStats)) {
      log.precision_stats.push_back(read_precision_stats(Fields(j, where, kPrecisionStats)));
    } else if (j.contains(kFallbackStep)) {
      log.fallbacks.push_back(read_fallback(Fields(j, where, kFallbackStep)));
    } else if (j.contains(kEnd)) {
      log.outcome = read_outcome(Fields(j, where, kEnd));
    } else {
      throw Error(where +
                  ": not a run, step, eval_step, skipped_step, routes, fallback_step, end or "
                  "precision_stats record");
    }
  });
  if (!have_run) throw Error(source + ": no run record (is this a mantissa metrics.jsonl?)");
  return log;
}

std::string metrics_line(const ThroughputRecord& r) {
  return write_fields(r, kThroughputFields).dump();
}

std::vector<ThroughputRecord> parse_throughput(std::string_view text, const std::string& source) {
  std::vector<ThroughputRecord> out;
  for_each_object(text, source, [&](const json& j, const std::string& where) {
    if (!j.contains(kInterleaved)) {
      throw Error(where + ": not an interleaved_throughput record (the throughput.jsonl " +
                  "mantissa compare writes)");
    }
    const Fields f(j, where, kInterleaved);
    ThroughputRecord r = read_fields<ThroughputRecord>(f, kThroughputFields);
    const bool finite =
        std::isfinite(r.items_per_second) && std::isfinite(r.slowest) && std::isfinite(r.fastest);
    if (!finite || r.slowest <= 0 || r.slowest > r.items_per_second ||
        r.items_per_second > r.fastest || r.steps < 1) {
      f.fail("not 0 < slowest <= items_per_s <= fastest with steps >= 1");
    }
    out.push_back(std::move(r));
  });
  return out;
}

std::vector<ThroughputRecord> read_throughput(const std::string& path) {
  return parse_throughput(read_file(path, "the throughput file"), path);
}

RunLog read_run_log(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  return parse_metrics(read_file(path, "the metrics file (is " + run_dir + " a run directory?)"),
                       path);
}

}  // namespace mantissa::report
