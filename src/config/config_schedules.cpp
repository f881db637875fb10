// trainer.init.schedulers: the list, each scheduler's param_group_tags and ScalePerParam
// wrappers, and the rule that two schedulers may not drive one key of one group.
#include <algorithm>
#include <iterator>

#include "config_internal.hpp"

namespace mantissa::config::detail {
namespace {

// param_group_tags: a tag, or a list of tags where null stands for the untagged groups.
std::optional<std::set<std::string>> read_tags(Reader& r) {
  if (!r.has("param_group_tags")) return std::nullopt;
  const YAML::Node n = r.raw("param_group_tags");
  const std::string where = r.key_path("param_group_tags");
  std::set<std::string> tags;
  if (n.IsScalar()) {
    tags.insert(n.Scalar());
    return tags;
  }
  if (!n.IsSequence() || n.size() == 0) {
    throw Error(where + ": expected a tag or a non-empty list of tags (null: untagged groups)");
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string tag =
        n[i].IsNull()
            ? std::string()
            : Reader::as<std::string>(n[i], where + "[" + std::to_string(i) + "]", "a tag");
    if (!tags.insert(tag).second) {
      throw Error(where + ": '" + (tag.empty() ? "null" : tag) + "' is listed twice");
    }
  }
  return tags;
}

SchedulerConfig parse_top(const YAML::Node& node, const std::string& path) {
  const std::string name = scheduler_node_name(node, path);
  const SchedulerName kind = scheduler_name(name, path);
  SchedulerConfig c;
  c.key = kind.key;
  c.scale_per_param = kind.scale_per_param;
  c.where = path + " (" + name + ")";
  Reader r(node.begin()->second, path + "." + name);
  c.tags = read_tags(r);
  c.schedule = kind.scale_per_param
                   ? parse_nested_schedule(r.raw("scheduler"), r.key_path("scheduler"), kind.key)
                   : parse_schedule_class(name, r, path);
  r.finish();
  return c;
}

std::string tag_list(const std::set<std::string>& tags) {
  std::string out;
  for (const std::string& t : tags) out += (out.empty() ? "" : ", ") + (t.empty() ? "null" : t);
  return out;
}

// Two schedulers may not drive one key of one group: with the same key, each needs
// param_group_tags and they may share none.
void check_one_scheduler_per_key(const std::vector<SchedulerConfig>& all) {
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const SchedulerConfig &a = all[i], &b = all[j];
      if (a.key != b.key) continue;
      const std::string both = a.where + " and " + b.where + " both drive " +
                               std::string(name_of(kScheduledKeyNames, a.key));
      if (!a.tags || !b.tags) {
        throw Error(both + ": schedulers of one key need param_group_tags, and no tag in common");
      }
      std::set<std::string> shared;
      std::set_intersection(a.tags->begin(), a.tags->end(), b.tags->begin(), b.tags->end(),
                            std::inserter(shared, shared.begin()));
      if (!shared.empty()) throw Error(both + " of the groups tagged " + tag_list(shared));
    }
  }
}

}  // namespace

std::vector<SchedulerConfig> parse_schedulers(const YAML::Node& list, const std::string& path) {
  std::vector<SchedulerConfig> out;
  if (list.IsMap()) {
    out.push_back(parse_top(list, path));
  } else if (list.IsSequence()) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(parse_top(list[i], path + "[" + std::to_string(i) + "]"));
    }
  } else {
    throw Error(path + ": expected a list of schedulers, as [{Name: {parameters}}]");
  }
  check_one_scheduler_per_key(out);
  return out;
}

}  // namespace mantissa::config::detail
