#pragma once
// The probe of "which layer loses what": on a sampled step a QuantProbe is active on the
// thread that runs the step (ProbeScope), and every point where an op rounds to H or
// quantizes to an fp8 or block format records what that rounding lost (QuantStats) under its
// layer, op and role. On every other step active_probe() is nullptr and the ops skip the
// measuring: the cost of the probe when off is one thread-local read per op.
//
// The layer an op belongs to is the name of the module that called it (nn::Module sets a
// LayerScope around its forward); nodes of the autograd graph keep it for their backward.
//
// Adding a quantization point (a new recipe), one line where the float32 values x (a row-major
// rows x cols matrix), their element values q (decoded, unscaled) and the tiles' decode scales
// are at hand:
//   precision::probe_elements(precision::QuantRole::input, "linear", element_format, x, q,
//                             rows, cols, [&](auto r, auto c) { return scale(r, c); },
//                             tensor_scale);
// Per-tensor roundings of whole tensors: autograd's RoundingProbe, over
// quant::measure_quantization.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "mantissa/precision/quant_stats.hpp"

namespace mantissa::precision {

// A layer's name ("blocks.0.attn.qkv"), shared by the nodes made under it. Null: no layer.
using LayerName = std::shared_ptr<const std::string>;

// The layer the calling thread's ops belong to (the innermost LayerScope), or null.
const LayerName& current_layer();

// Names the layer for its lifetime on this thread, and restores the previous one after. A
// null name leaves the enclosing layer in force.
class LayerScope {
 public:
  explicit LayerScope(const LayerName& name);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  LayerName previous_;
  bool set_;
};

// Where a rounding happened: the layer, the op (its autograd name: "linear", "conv2d") and
// the role. `op` points at a string that outlives the probe (a literal, a node's name()).
struct QuantSite {
  LayerName layer;
  const char* op = "";
  QuantRole role = QuantRole::input;
};

// A sampled step's records, one per (layer, op, role, format), merged across the roundings at
// that site (several micro-batches, several threads). record() may be called from any thread.
class QuantProbe {
 public:
  struct Entry {
    std::string layer;  // "" for ops outside every named module
    std::string op;
    QuantRole role;
    QuantStats stats;
  };

  void record(const QuantSite& site, const QuantStats& stats);
  // In the order each site was first recorded (forward order, then backward order).
  std::vector<Entry> entries() const;

 private:
  using Key = std::tuple<std::string, std::string, QuantRole, Format>;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::map<Key, std::size_t> index_;  // where each site's entry is
};

// The probe of this thread's sampled step, or nullptr.
QuantProbe* active_probe();

// On a sampled step (a probe active on this thread), records under (layer, op, role) what a
// block-scaled quantization of the row-major rows x cols matrix x lost, q its element values
// and tile_scale_at(r, c) the decode scale of element (r, c)'s tile, each element standing for
// q * tile scale * tensor_scale (QuantStats::add_elements); on any other step nothing, for one
// thread-local read. Call it on the thread that runs the op (in a backward, autograd names
// the node's layer as the current one).
template <class TileScaleAt>
void probe_elements(QuantRole role, const char* op, Format element, const float* x, const float* q,
                    std::int64_t rows, std::int64_t cols, TileScaleAt&& tile_scale_at,
                    double tensor_scale = 1.0, const LayerName& layer = current_layer()) {
  QuantProbe* probe = active_probe();
  if (probe == nullptr || rows <= 0 || cols <= 0) return;
  QuantStats s(element);
  std::vector<float> scales(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      scales[static_cast<std::size_t>(c)] = static_cast<float>(tile_scale_at(r, c));
    }
    s.add_elements(x + r * cols, q + r * cols, cols, scales.data(), tensor_scale);
  }
  probe->record({layer, op, role}, s);
}

// Makes `probe` the active one on this thread for its lifetime (nullptr: none), then
// restores the previous one.
class ProbeScope {
 public:
  explicit ProbeScope(QuantProbe* probe);
  ~ProbeScope();
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  QuantProbe* previous_;
};

}  // namespace mantissa::precision
