#include "param_groups.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>

#include "mantissa/error.hpp"

namespace mantissa::train {
namespace {

const std::string kParams = "trainer.init.optimizer: params";

bool matches(const config::ParamGroupConfig& entry, const std::string& name) {
  return std::any_of(entry.globs.begin(), entry.globs.end(), [&](const std::string& glob) {
    return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0;
  });
}

struct Group {
  std::vector<std::size_t> entries;  // the params entries its parameters match
  optim::ParamGroup group;
  std::optional<double> adjust_learning_rate;
};

// The optimizer's settings with the fields each of `entries` sets; two entries setting one
// field is an error.
optim::OptimizerSettings merged(const config::TrainerConfig& c,
                                const std::vector<std::size_t>& entries,
                                const std::string& example) {
  optim::OptimizerSettings out = c.optimizer.settings;
  std::map<std::string, std::string> set_by;  // field -> tag
  for (std::size_t i : entries) {
    const config::ParamGroupConfig& e = c.optimizer.params[i];
    for (const std::string& f : e.fields) {
      if (!set_by.emplace(f, e.tag).second) {
        throw Error(kParams + ": the entries tagged " + set_by[f] + " and " + e.tag + " both set " +
                    f + " for " + example);
      }
    }
    std::visit(
        [&](auto& s) {
          using S = std::decay_t<decltype(s)>;
          const S& theirs = std::get<S>(e.settings);
          optim::for_each_field(
              s, optim::Overloaded{
                     [&](const auto& f, auto& v) {
                       if (e.fields.count(std::string(f.name)) != 0) v = theirs.*f.member;
                     },
                     [](const optim::PairField<S>&, double&, double&) {},  // set as numbers
                 });
        },
        out);
  }
  return out;
}

std::vector<Group> partition(const config::TrainerConfig& c,
                             const std::vector<std::pair<std::string, autograd::Variable>>& named) {
  std::vector<Group> groups;
  std::vector<bool> used(c.optimizer.params.size(), false);
  for (const auto& [name, param] : named) {
    std::vector<std::size_t> entries;
    for (std::size_t i = 0; i < c.optimizer.params.size(); ++i) {
      if (matches(c.optimizer.params[i], name)) entries.push_back(i);
    }
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.entries == entries; });
    if (g == groups.end()) {
      groups.push_back({entries, {}, {}});
      g = groups.end() - 1;
      std::set<std::string> tags;
      for (std::size_t i : entries) {
        used[i] = true;
        tags.insert(c.optimizer.params[i].tag);
        const auto& adjust = c.optimizer.params[i].adjust_learning_rate;
        if (adjust && g->adjust_learning_rate) {
          throw Error(kParams + ": two entries set adjust_learning_rate for " + name);
        }
        if (adjust) g->adjust_learning_rate = adjust;
      }
      g->group.tags.assign(tags.begin(), tags.end());
      if (!entries.empty()) g->group.settings = merged(c, entries, name);
    }
    g->group.params.push_back(param);
    g->group.names.push_back(name);
  }
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) {
      throw Error(kParams + "[" + std::to_string(i) + "] (tag " + c.optimizer.params[i].tag +
                  "): its globs match no parameter");
    }
  }
  return groups;
}

bool applies(const config::SchedulerConfig& s, const optim::ParamGroup& g) {
  if (!s.tags) return true;
  if (g.tags.empty()) return s.tags->count("") != 0;  // null: the untagged groups
  return std::any_of(g.tags.begin(), g.tags.end(),
                     [&](const std::string& t) { return s.tags->count(t) != 0; });
}

std::string describe(const optim::ParamGroup& g) {
  std::string tags;
  for (const std::string& t : g.tags) tags += (tags.empty() ? "" : ", ") + t;
  return "the group " + (tags.empty() ? std::string("without tags") : "tagged " + tags) +
         " (first parameter " + g.names.front() + ")";
}

// The scheduler of `key` that applies to `g`, if any; two are an error.
const config::SchedulerConfig* scheduler_for(const config::TrainerConfig& c,
                                             config::ScheduledKey key, const optim::ParamGroup& g) {
  const config::SchedulerConfig* found = nullptr;
  for (const config::SchedulerConfig& s : c.schedulers) {
    if (s.key != key || !applies(s, g)) continue;
    if (found != nullptr) {
      throw Error(found->where + " and " + s.where + " both drive " +
                  std::string(name_of(config::kScheduledKeyNames, key)) + " of " + describe(g));
    }
    found = &s;
  }
  return found;
}

}  // namespace

std::vector<optim::ParamGroup> build_param_groups(
    const config::TrainerConfig& c,
    const std::vector<std::pair<std::string, autograd::Variable>>& named_parameters) {
  std::vector<Group> groups = partition(c, named_parameters);
  std::vector<optim::ParamGroup> out;
  for (Group& x : groups) {
    optim::ParamGroup& g = x.group;
    const config::SchedulerConfig* lr = scheduler_for(c, config::ScheduledKey::learning_rate, g);
    const config::SchedulerConfig* wd = scheduler_for(c, config::ScheduledKey::weight_decay, g);
    g.learning_rate = lr != nullptr ? lr->schedule : optim::constant(c.optimizer.learning_rate);
    // adjust_learning_rate scales the learning rate (the vendor wraps every learning-rate
    // scheduler in ScalePerParamLR when a group has one), and the weight decay of a
    // ScalePerParamWD.
    if (x.adjust_learning_rate)
      g.learning_rate = optim::scaled(g.learning_rate, *x.adjust_learning_rate);
    if (wd != nullptr) {
      g.weight_decay = wd->scale_per_param && x.adjust_learning_rate
                           ? optim::scaled(wd->schedule, *x.adjust_learning_rate)
                           : wd->schedule;
    }
    out.push_back(std::move(g));
  }
  for (const config::SchedulerConfig& s : c.schedulers) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const optim::ParamGroup& g) { return applies(s, g); })) {
      throw Error(s.where + ": its param_group_tags match no parameter group");
    }
  }
  return out;
}

}  // namespace mantissa::train
