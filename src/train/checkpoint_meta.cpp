// A checkpoint's metadata: the typed fields a run resumes from, as strings and back. Every
// field read from a file is checked for type and range before anything uses it.
#include <charconv>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mantissa/error.hpp"
#include "mantissa/precision/policy.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::train {
namespace {

// "float32, float16, bfloat16 or cbfloat16": the formats a run computes in, from the table.
std::string compute_formats_text() {
  std::string out(numerics::name(numerics::Format::float32));
  const auto& halves = precision::kHalfFormats;
  for (std::size_t i = 0; i < halves.size(); ++i) {
    out += (i + 1 == halves.size() ? " or " : ", ") + std::string(numerics::name(halves[i]));
  }
  return out;
}

using json = nlohmann::json;

class Fields {
 public:
  Fields(const std::map<std::string, std::string>& m, const std::string& path)
      : m_(m), path_(path) {}
  bool has(const char* key) const { return m_.count(key) != 0; }
  const std::string& text(const char* key) const {
    const auto it = m_.find(key);
    if (it == m_.end()) throw Error(path_ + ": checkpoint metadata lacks '" + key + "'");
    return it->second;
  }
  [[noreturn]] void bad(const char* key, const std::string& expected) const {
    std::string v = text(key);
    if (v.size() > 60) v = v.substr(0, 60) + "...";
    throw Error(path_ + ": checkpoint metadata '" + key + "': '" + v + "' (expected " + expected +
                ")");
  }
  // A decimal integer >= least (0 unless said), the whole text.
  std::int64_t count(const char* key, std::int64_t least = 0) const {
    const std::string& t = text(key);
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || v < least) {
      bad(key, "an integer >= " + std::to_string(least));
    }
    return v;
  }
  json object(const char* key, const char* expected) const {
    json j = support::parse_untrusted_json(text(key), path_ + ": checkpoint metadata '" + key + "'",
                                           /*allow_invalid=*/true);
    if (j.is_object()) return j;
    bad(key, expected);
  }

 private:
  const std::map<std::string, std::string>& m_;
  const std::string& path_;
};

// j[name] as T when it holds one (unsigned: an integer >= 0).
template <class T>
bool field(const json& j, const char* name, T& out) {
  if (!j.contains(name) || !j[name].is_number_unsigned()) return false;
  out = j[name].get<T>();
  return true;
}

}  // namespace

std::map<std::string, std::string> encode_checkpoint_meta(const CheckpointMeta& meta) {
  std::map<std::string, std::string> m;
  m["global_step"] = std::to_string(meta.global_step);
  m["optimizer_step"] = std::to_string(meta.optimizer_step);
  m["config"] = meta.config;
  m["fp16_type"] = std::string(numerics::name(meta.fp16_type));
  m["train_loader"] =
      json{{"epoch", meta.train_loader.epoch}, {"position", meta.train_loader.position}}.dump();
  m["rng"] = json{{"seed", meta.rng.seed}, {"counter", meta.rng.counter}}.dump();
  m["dist_ranks"] = std::to_string(meta.dist_ranks);
  if (meta.scaler) m["scaler"] = amp::encode_scaler_state(*meta.scaler);
  if (meta.stochastic_position) {
    m["quant_stochastic_position"] = std::to_string(*meta.stochastic_position);
  }
  if (!meta.routes.empty()) {
    std::string lines;
    for (const kernels::RouteRecord& r : meta.routes) lines += kernels::route_record_line(r) + "\n";
    m["routes"] = lines;
  }
  return m;
}

CheckpointMeta decode_checkpoint_meta(const std::map<std::string, std::string>& metadata,
                                      const std::string& path) {
  const Fields f(metadata, path);
  CheckpointMeta meta;
  meta.global_step = f.count("global_step");
  meta.optimizer_step = f.count("optimizer_step");
  if (meta.optimizer_step > meta.global_step) {
    f.bad("optimizer_step", "at most global_step, " + std::to_string(meta.global_step));
  }
  meta.config = f.text("config");
  if (meta.config.empty()) f.bad("config", "the run's YAML config");
  const std::optional<numerics::Format> format = numerics::parse_format(f.text("fp16_type"));
  if (!format || !(*format == numerics::Format::float32 || precision::is_half_format(*format))) {
    f.bad("fp16_type", compute_formats_text());
  }
  meta.fp16_type = *format;
  const char* loader_form = "{\"epoch\": <integer >= 0>, \"position\": <integer >= 0>}";
  const json loader = f.object("train_loader", loader_form);
  if (!field(loader, "epoch", meta.train_loader.epoch) ||
      !field(loader, "position", meta.train_loader.position)) {
    f.bad("train_loader", loader_form);
  }
  const char* rng_form = "{\"seed\": <integer >= 0>, \"counter\": <integer >= 0>}";
  const json rng = f.object("rng", rng_form);
  if (!field(rng, "seed", meta.rng.seed) || !field(rng, "counter", meta.rng.counter)) {
    f.bad("rng", rng_form);
  }
  if (f.has("dist_ranks")) {
    meta.dist_ranks = f.count("dist_ranks", 1);
  }
  if (f.has("quant_stochastic_position")) {
    meta.stochastic_position = f.count("quant_stochastic_position");
  }
  if (f.has("scaler")) {
    try {
      meta.scaler = amp::decode_scaler_state(f.text("scaler"));
    } catch (const Error& e) {
      throw Error(path + ": checkpoint metadata 'scaler': " + e.what());
    }
  }
  if (f.has("routes")) {
    constexpr std::size_t kMaxRoutes = 100000;
    std::istringstream lines(f.text("routes"));
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      std::optional<kernels::RouteRecord> r = kernels::parse_route_record_line(line);
      if (!r || meta.routes.size() >= kMaxRoutes) {
        f.bad("routes", "at most " + std::to_string(kMaxRoutes) +
                            " lines '<m> <n> <k> <NN|NT|TN|TT> <format> <passes> <all|thread> "
                            "<route> <GFLOP/s per route>' (line " +
                            std::to_string(number) + " is not)");
      }
      meta.routes.push_back(*r);
    }
  }
  return meta;
}

}  // namespace mantissa::train
