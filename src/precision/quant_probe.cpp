#include "mantissa/precision/quant_probe.hpp"

namespace mantissa::precision {
namespace {
thread_local LayerName t_layer;
thread_local QuantProbe* t_probe = nullptr;
}  // namespace

const LayerName& current_layer() {
  return t_layer;
}

LayerScope::LayerScope(const LayerName& name) : set_(name != nullptr) {
  if (!set_) return;
  previous_ = std::move(t_layer);
  t_layer = name;
}

LayerScope::~LayerScope() {
  if (set_) t_layer = std::move(previous_);
}

void QuantProbe::record(const QuantSite& site, const QuantStats& stats) {
  const std::string layer = site.layer ? *site.layer : std::string();
  Key key{layer, site.op, site.role, stats.format()};
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto [at, fresh] = index_.emplace(std::move(key), entries_.size());
  if (fresh) {
    entries_.push_back({layer, site.op, site.role, stats});
  } else {
    entries_[at->second].stats.merge(stats);
  }
}

std::vector<QuantProbe::Entry> QuantProbe::entries() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return entries_;
}

QuantProbe* active_probe() {
  return t_probe;
}

ProbeScope::ProbeScope(QuantProbe* probe) : previous_(t_probe) {
  t_probe = probe;
}

ProbeScope::~ProbeScope() {
  t_probe = previous_;
}

}  // namespace mantissa::precision
