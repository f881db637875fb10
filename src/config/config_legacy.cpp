// The vendor's legacy precision keys, accepted where a config in mantissa's layout carries
// them and moved to trainer.init.precision before anything is read, one note each.
#include <array>
#include <string_view>

#include "config_internal.hpp"

namespace mantissa::config::detail {
namespace {

// Where a legacy key sits: the model block, the optimizer's block ({Name: {...}}), or the
// legacy top-level runconfig section.
enum class Section { model, optimizer, runconfig };

struct LegacyKey {
  Section section;
  std::string_view key;
  std::string_view precision_key;  // its name under trainer.init.precision
  bool bfloat16_flag = false;      // use_bfloat16: true -> bfloat16, false -> float16
};

constexpr std::array<LegacyKey, 12> kLegacyKeys = {{
    {Section::model, "mixed_precision", "enabled"},
    {Section::model, "use_bfloat16", "fp16_type", true},
    {Section::model, "fp16_type", "fp16_type"},
    {Section::runconfig, "precision_opt_level", "precision_opt_level"},
    {Section::optimizer, "loss_scaling_factor", "loss_scaling_factor"},
    {Section::optimizer, "initial_loss_scale", "initial_loss_scale"},
    {Section::optimizer, "steps_per_increase", "steps_per_increase"},
    {Section::optimizer, "min_loss_scale", "min_loss_scale"},
    {Section::optimizer, "max_loss_scale", "max_loss_scale"},
    {Section::optimizer, "max_gradient_norm", "max_gradient_norm"},
    {Section::optimizer, "max_gradient_value", "max_gradient_value"},
    {Section::optimizer, "log_summaries", "log_loss_scale"},
}};

bool is_map(const YAML::Node& n) {
  return n && n.IsMap();
}

// The section's mapping and its key path ("" when the config has none).
std::pair<YAML::Node, std::string> section_of(YAML::Node& root, Section s) {
  const YAML::Node& r = root;
  if (s == Section::runconfig) {
    return is_map(r["runconfig"]) ? std::pair{root["runconfig"], std::string("runconfig")}
                                  : std::pair{YAML::Node(), std::string()};
  }
  if (!is_map(r["trainer"]) || !is_map(r["trainer"]["init"])) return {YAML::Node(), ""};
  YAML::Node init = root["trainer"]["init"];
  const YAML::Node& ci = init;
  if (s == Section::model) {
    return is_map(ci["model"]) ? std::pair{init["model"], std::string("trainer.init.model")}
                               : std::pair{YAML::Node(), std::string()};
  }
  if (!is_map(ci["optimizer"]) || ci["optimizer"].size() != 1) return {YAML::Node(), ""};
  const std::string name =
      Reader::key_text(ci["optimizer"].begin()->first, "trainer.init.optimizer");
  YAML::Node opt = init["optimizer"][name];
  return is_map(opt) ? std::pair{opt, "trainer.init.optimizer." + name}
                     : std::pair{YAML::Node(), std::string()};
}

}  // namespace

void migrate_legacy_keys(YAML::Node& root, std::vector<std::string>& notes) {
  for (const LegacyKey& k : kLegacyKeys) {
    auto [section, where] = section_of(root, k.section);
    const std::string key(k.key);
    if (!section || !static_cast<const YAML::Node&>(section)[key]) continue;
    const std::string old_path = where + "." + key;
    const std::string new_key(k.precision_key);
    const std::string new_path = "trainer.init.precision." + new_key;
    YAML::Node precision = root["trainer"]["init"]["precision"];
    if (precision && !precision.IsNull() && !precision.IsMap()) {
      throw Error("trainer.init.precision: expected a mapping of keys to values");
    }
    if (static_cast<const YAML::Node&>(precision)[new_key]) {
      throw Error(old_path + ": the deprecated spelling of " + new_path +
                  ", which is set too (set one: " + new_path + ")");
    }
    YAML::Node value = YAML::Clone(section[key]);
    std::string note = old_path + " is deprecated: use " + new_path;
    if (k.bfloat16_flag) {
      const bool bf16 = Reader::as<bool>(value, old_path, "true or false");
      value = YAML::Node(bf16 ? "bfloat16" : "float16");
      note += ": " + value.Scalar();
    }
    precision[new_key] = value;
    section.remove(key);
    notes.push_back(note);
  }
  // The legacy runconfig section is read for precision_opt_level alone.
  const YAML::Node& r = root;
  if (r["runconfig"]) {
    if (!is_map(r["runconfig"]) && !r["runconfig"].IsNull()) {
      throw Error("runconfig: expected a mapping (the legacy section; precision_opt_level only)");
    }
    if (is_map(r["runconfig"]) && r["runconfig"].size() > 0) {
      const std::string k = Reader::key_text(r["runconfig"].begin()->first, "runconfig");
      throw Error("runconfig." + k +
                  ": unknown key (the legacy runconfig section is read for precision_opt_level "
                  "only; see docs/compatibility.md for its keys' places under trainer.init)");
    }
    root.remove("runconfig");
  }
}

}  // namespace mantissa::config::detail
