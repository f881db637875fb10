// The GradScaler's state as a checkpoint keeps it (JSON) and as the vendor's state_dict():
// one field list, read by every direction.
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/error.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::amp {
namespace {

using json = nlohmann::json;

template <class T>
struct Field {
  const char* key;
  T ScalerState::*member;
  bool in_static_state;  // static scaling's state_dict holds loss_scale alone
};

constexpr auto kFields = std::make_tuple(
    Field<double>{"loss_scale", &ScalerState::loss_scale, true},
    Field<std::int64_t>{"steps_since_rescale", &ScalerState::steps_since_rescale, false},
    Field<std::int64_t>{"overflows_since_rescale", &ScalerState::overflows_since_rescale, false},
    Field<std::int64_t>{"num_skipped_steps", &ScalerState::num_skipped_steps, false},
    Field<std::int64_t>{"hysteresis_left", &ScalerState::hysteresis_left, false},
    Field<bool>{"scaling_stopped", &ScalerState::scaling_stopped, false});

template <class F>
void for_each_field(F&& f) {
  std::apply([&](const auto&... field) { (f(field), ...); }, kFields);
}

// Throws mantissa::Error when `key` is none of the fields: a state written by something else
// is refused rather than partly taken.
void require_known_key(const std::string& key) {
  bool known = false;
  std::string names;
  for_each_field([&](const auto& f) {
    known = known || key == f.key;
    names += (names.empty() ? "" : ", ") + std::string(f.key);
  });
  if (!known) throw Error("scaler state: unknown key '" + key + "' (expected " + names + ")");
}

}  // namespace

ScalerStateDict scaler_state_dict(const ScalerState& state, bool dynamic) {
  ScalerStateDict d;
  for_each_field([&](const auto& f) {
    if (dynamic || f.in_static_state) d[f.key] = state.*f.member;
  });
  return d;
}

ScalerState scaler_state_from_dict(const ScalerStateDict& dict, bool dynamic, ScalerState base) {
  for (const auto& entry : dict) require_known_key(entry.first);
  for_each_field([&](const auto& f) {
    if (!dynamic && !f.in_static_state) return;
    using T = std::remove_reference_t<decltype(base.*f.member)>;
    const auto it = dict.find(f.key);
    if (it == dict.end()) throw Error(std::string("scaler state: missing '") + f.key + "'");
    const T* v = std::get_if<T>(&it->second);
    if (v == nullptr) throw Error(std::string("scaler state: '") + f.key + "' has the wrong type");
    base.*f.member = *v;
  });
  return base;
}

std::string encode_scaler_state(const ScalerState& state) {
  json j = json::object();
  for (const auto& [key, value] : scaler_state_dict(state, true)) {
    std::visit([&, k = key](const auto& v) { j[k] = v; }, value);
  }
  return j.dump();
}

ScalerState decode_scaler_state(const std::string& json_text) {
  const json j = support::parse_untrusted_json(json_text, "scaler state");
  if (!j.is_object()) throw Error("scaler state: not a JSON object");
  for (const auto& item : j.items()) require_known_key(item.key());
  ScalerStateDict d;
  ScalerState s;
  for_each_field([&](const auto& f) {
    using T = std::remove_reference_t<decltype(s.*f.member)>;
    if (!j.contains(f.key)) return;  // scaler_state_from_dict names it
    try {
      d[f.key] = j.at(f.key).template get<T>();
    } catch (const json::exception& e) {
      throw Error(std::string("scaler state: '") + f.key + "' is malformed (" + e.what() + ")");
    }
  });
  const ScalerState out = scaler_state_from_dict(d, true, s);
  check_scaler_state(out);
  return out;
}

void check_scaler_state(const ScalerState& s) {
  const auto bad = [](const char* key, const std::string& value, const char* expected) {
    throw Error(std::string("scaler state: '") + key + "' is " + value + " (expected " + expected +
                ")");
  };
  if (!(s.loss_scale > 0 && s.loss_scale <= std::numeric_limits<float>::max())) {
    std::ostringstream v;
    v << s.loss_scale;
    bad("loss_scale", v.str(), "a finite float32 > 0");
  }
  for (const auto& [key, value] : {std::pair{"steps_since_rescale", s.steps_since_rescale},
                                   std::pair{"overflows_since_rescale", s.overflows_since_rescale},
                                   std::pair{"num_skipped_steps", s.num_skipped_steps}}) {
    if (value < 0) bad(key, std::to_string(value), "an integer >= 0");
  }
  if (s.overflows_since_rescale > s.steps_since_rescale) {
    bad("overflows_since_rescale", std::to_string(s.overflows_since_rescale),
        "at most steps_since_rescale");
  }
  if (s.hysteresis_left < 1) bad("hysteresis_left", std::to_string(s.hysteresis_left), ">= 1");
}

}  // namespace mantissa::amp
