#include "settings_change.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace mantissa::report::detail {
namespace {

constexpr std::string_view kNone = "(none)";

// The rows a fall-back does not change: the optimizer's and the learning rate's.
constexpr std::array<std::string_view, 4> kKeptByFallback = {"optimizer", "optimizer state_dtype",
                                                             "learning rate", "master_weights"};

const std::string* value_of(const std::vector<SettingRow>& rows, const std::string& name) {
  for (const SettingRow& r : rows) {
    if (r.first == name) return &r.second;
  }
  return nullptr;
}

}  // namespace

SettingsChange settings_change(const RunRecord& before,
                               const std::vector<FallbackRecord>& fallbacks,
                               const RunRecord& after) {
  SettingsChange c;
  c.step = after.start_step;
  const FallbackRecord* fell_back = nullptr;
  for (const FallbackRecord& f : fallbacks) {
    if (f.step > before.start_step && f.step <= after.start_step) fell_back = &f;
  }
  const std::string was =
      fell_back != nullptr ? std::string(numerics::name(fell_back->to)) : precision_name(before);
  if (const std::string is = precision_name(after); is != was) {
    c.changed.push_back({std::string(kPrecisionChange), was, is});
  }
  const auto compared = [&](const std::string& name) {
    return fell_back == nullptr ||
           std::find(kKeptByFallback.begin(), kKeptByFallback.end(), name) != kKeptByFallback.end();
  };
  const auto compare = [&](const std::string& name) {
    const std::string* a = value_of(before.settings, name);
    const std::string* b = value_of(after.settings, name);
    if (!compared(name) || (a != nullptr && b != nullptr && *a == *b)) return;
    c.changed.push_back(
        {name, a != nullptr ? *a : std::string(kNone), b != nullptr ? *b : std::string(kNone)});
  };
  for (const SettingRow& r : before.settings) compare(r.first);
  for (const SettingRow& r : after.settings) {
    if (value_of(before.settings, r.first) == nullptr) compare(r.first);
  }
  return c;
}

}  // namespace mantissa::report::detail
