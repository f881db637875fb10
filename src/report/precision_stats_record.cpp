#include "precision_stats_record.hpp"

#include <string>

namespace mantissa::report {
namespace {

using namespace detail;

// The counts, in the order the record writes them.
constexpr std::pair<const char*, std::int64_t precision::QuantCounts::*> kCountFields[] = {
    {"elements", &precision::QuantCounts::elements},
    {"flushed", &precision::QuantCounts::flushed},
    {"subnormal", &precision::QuantCounts::subnormal},
    {"saturated", &precision::QuantCounts::saturated},
    {"overflowed", &precision::QuantCounts::overflowed},
    {"nonfinite", &precision::QuantCounts::nonfinite},
};

PrecisionSite read_site(const Fields& record, const json& j, std::size_t index) {
  const std::string where = "sites[" + std::to_string(index) + "]";
  if (!j.is_object()) record.fail("'" + where + "' is " + type_word(j) + ", expected an object");
  // Errors name the site: "...: 'sites[3].role' is ...".
  const auto bad = [&](const std::string& key, const std::string& what) {
    record.fail("'" + where + "." + key + "' " + what);
  };
  const auto text = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string()) bad(key, "is missing or not a string");
    return j[key].get<std::string>();
  };
  PrecisionSite s;
  s.layer = text("layer");
  s.op = text("op");
  const std::string role = text("role");
  const std::optional<precision::QuantRole> r = find_named(precision::kQuantRoleNames, role);
  if (!r)
    bad("role",
        "is '" + role + "' (expected one of: " + names_of(precision::kQuantRoleNames) + ")");
  s.role = *r;
  const std::string format = text("format");
  const std::optional<numerics::Format> f = numerics::parse_format(format);
  if (!f) bad("format", "is '" + format + "', not a number format");
  s.format = *f;
  for (const auto& [key, member] : kCountFields) {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<std::int64_t>() < 0) {
      bad(key, "is missing or not an integer >= 0");
    }
    s.counts.*member = j[key].get<std::int64_t>();
  }
  const precision::QuantCounts& c = s.counts;
  // (Subtracted, not added: two counts near 2^63 would overflow a sum.)
  if (c.flushed > c.elements - c.subnormal || c.saturated > c.elements ||
      c.overflowed > c.elements - c.nonfinite) {
    bad("elements", "is smaller than the elements it counts");
  }
  if (j.contains("snr_db") && !j["snr_db"].is_null()) {
    if (!j["snr_db"].is_number()) bad("snr_db", "is not a number or null");
    s.snr_db = j["snr_db"].get<double>();
  }
  if (j.contains("scale_min") || j.contains("scale_max")) {
    for (const char* key : {"scale_min", "scale_max"}) {
      if (!j.contains(key) || !j[key].is_number()) bad(key, "is missing or not a number");
    }
    s.scale = precision::QuantStats::ScaleRange{j["scale_min"].get<double>(),
                                                j["scale_max"].get<double>()};
  }
  return s;
}

}  // namespace

PrecisionStatsRecord precision_stats_record(std::int64_t step,
                                            const std::vector<precision::QuantProbe::Entry>& e) {
  PrecisionStatsRecord r;
  r.step = step;
  for (const precision::QuantProbe::Entry& entry : e) {
    const precision::QuantStats& st = entry.stats;
    r.sites.push_back({entry.layer, entry.op, entry.role, st.format(), st.counts(), st.snr_db(),
                       st.scale_range()});
  }
  return r;
}

std::string metrics_line(const PrecisionStatsRecord& r) {
  json sites = json::array();
  for (const PrecisionSite& s : r.sites) {
    json j = {{"layer", s.layer},
              {"op", s.op},
              {"role", name_of(precision::kQuantRoleNames, s.role)},
              {"format", numerics::name(s.format)}};
    for (const auto& [key, member] : kCountFields) j[key] = s.counts.*member;
    j["snr_db"] = s.snr_db ? json(*s.snr_db) : json(nullptr);
    if (s.scale) {
      j["scale_min"] = s.scale->min;
      j["scale_max"] = s.scale->max;
    }
    sites.push_back(std::move(j));
  }
  return json{{kPrecisionStats, r.step}, {"sites", sites}}.dump();
}

namespace detail {

PrecisionStatsRecord read_precision_stats(const Fields& f) {
  PrecisionStatsRecord r;
  r.step = f.integer(kPrecisionStats);
  const json& sites = f.required("sites");
  if (!sites.is_array())
    f.fail("'sites' is " + std::string(type_word(sites)) + ", expected a list");
  for (std::size_t i = 0; i < sites.size(); ++i) r.sites.push_back(read_site(f, sites[i], i));
  return r;
}

}  // namespace detail
}  // namespace mantissa::report
