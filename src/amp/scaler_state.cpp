// The GradScaler's state in a checkpoint: one field list, read by both directions.
#include <nlohmann/json.hpp>
#include <tuple>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/error.hpp"

namespace mantissa::amp {
namespace {

using json = nlohmann::json;

template <class T>
struct Field {
  const char* key;
  T ScalerState::*member;
};

constexpr auto kFields = std::make_tuple(
    Field<double>{"loss_scale", &ScalerState::loss_scale},
    Field<std::int64_t>{"steps_since_rescale", &ScalerState::steps_since_rescale},
    Field<std::int64_t>{"overflows_since_rescale", &ScalerState::overflows_since_rescale},
    Field<std::int64_t>{"num_skipped_steps", &ScalerState::num_skipped_steps},
    Field<std::int64_t>{"hysteresis_left", &ScalerState::hysteresis_left},
    Field<bool>{"scaling_stopped", &ScalerState::scaling_stopped});

template <class T>
void read(const json& j, const Field<T>& f, ScalerState& s) {
  if (!j.contains(f.key)) throw Error(std::string("scaler state: missing '") + f.key + "'");
  try {
    s.*f.member = j.at(f.key).template get<T>();
  } catch (const json::exception& e) {
    throw Error(std::string("scaler state: '") + f.key + "' is malformed (" + e.what() + ")");
  }
}

}  // namespace

std::string encode_scaler_state(const ScalerState& state) {
  json j = json::object();
  std::apply([&](const auto&... f) { ((j[f.key] = state.*f.member), ...); }, kFields);
  return j.dump();
}

ScalerState decode_scaler_state(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw Error(std::string("scaler state: not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw Error("scaler state: not a JSON object");
  ScalerState s;
  std::apply([&](const auto&... f) { (read(j, f, s), ...); }, kFields);
  return s;
}

}  // namespace mantissa::amp
