#include "mantissa/amp/fp8_layers.hpp"

#include "mantissa/error.hpp"
#include "mantissa/nn/layers.hpp"

namespace mantissa::amp {
namespace {

using precision::kFp8Slots;

std::string slot_name(int slot) {
  return std::string(name_of(precision::kFp8SlotNames, static_cast<precision::Fp8Slot>(slot)));
}

}  // namespace

Fp8Layers::Fp8Layers(nn::Module& root, const precision::Fp8Settings& settings) {
  if (!settings.enabled) return;
  layers_ = nn::attach_fp8(root, settings);
  window_.assign(layers_.size() * kFp8Slots, {});
}

void Fp8Layers::update(const Agreement& agree) {
  if (agree && !layers_.empty()) {
    std::vector<float> amax;
    std::vector<std::int64_t> counts;
    for (const auto& [name, meta] : layers_) {
      const precision::Fp8Meta::StepFigures f = meta->step_figures();
      for (int s = 0; s < kFp8Slots; ++s) {
        amax.push_back(f.amax[static_cast<std::size_t>(s)]);
        counts.push_back(f.counts[static_cast<std::size_t>(s)].overflows);
        counts.push_back(f.counts[static_cast<std::size_t>(s)].underflows);
      }
    }
    agree(amax, counts);
    std::size_t a = 0, c = 0;
    for (const auto& [name, meta] : layers_) {
      precision::Fp8Meta::StepFigures f;
      for (int s = 0; s < kFp8Slots; ++s) {
        f.amax[static_cast<std::size_t>(s)] = amax[a++];
        f.counts[static_cast<std::size_t>(s)] = {counts[c], counts[c + 1]};
        c += 2;
      }
      meta->set_step_figures(f);
    }
  }
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    precision::Fp8Meta& meta = *layers_[l].second;
    meta.update();
    for (int s = 0; s < kFp8Slots; ++s) {
      const precision::Fp8Meta::Counts& c = meta.last_step_counts()[static_cast<std::size_t>(s)];
      precision::Fp8Meta::Counts& w = window_[l * kFp8Slots + static_cast<std::size_t>(s)];
      w.overflows += c.overflows;
      w.underflows += c.underflows;
      total_overflows_ += c.overflows;
      total_underflows_ += c.underflows;
    }
  }
}

precision::Fp8WindowCounts Fp8Layers::take_window() {
  precision::Fp8WindowCounts out;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    for (int s = 0; s < kFp8Slots; ++s) {
      precision::Fp8Meta::Counts& w = window_[l * kFp8Slots + static_cast<std::size_t>(s)];
      out.overflows += w.overflows;
      out.underflows += w.underflows;
      if (w.overflows != 0 || w.underflows != 0) {
        out.tensors.push_back({layers_[l].first + "." + slot_name(s), w.overflows, w.underflows});
      }
      w = {};
    }
  }
  return out;
}

std::map<std::string, tensor::Tensor> Fp8Layers::state_tensors() const {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [name, meta] : layers_) {
    const std::int64_t h = meta->settings().history_length;
    out[name + ".amax_history"] = tensor::Tensor::from_vector(meta->history(), {kFp8Slots, h});
    const auto& s = meta->scales();
    out[name + ".scale"] = tensor::Tensor::from_vector({s.begin(), s.end()}, {kFp8Slots});
  }
  return out;
}

void Fp8Layers::load_state_tensors(const std::map<std::string, tensor::Tensor>& state) {
  for (const auto& [name, meta] : layers_) {
    const auto history = state.find(name + ".amax_history");
    const auto scale = state.find(name + ".scale");
    if (history == state.end() || scale == state.end()) {
      throw Error(std::string(kFp8Prefix) + name +
                  ": no fp8 scaling state in the checkpoint, but this run trains in fp8");
    }
    const std::int64_t h = meta->settings().history_length;
    if (history->second.format() != numerics::Format::float32 ||
        history->second.shape() != tensor::Shape{kFp8Slots, h} ||
        scale->second.format() != numerics::Format::float32 ||
        scale->second.shape() != tensor::Shape{kFp8Slots}) {
      throw Error(std::string(kFp8Prefix) + name + ": expected F32 amax_history [3, " +
                  std::to_string(h) + "] and scale [3] (fp8.history_length is " +
                  std::to_string(h) + ")");
    }
    const tensor::Tensor hc = history->second.contiguous();
    const tensor::Tensor sc = scale->second.contiguous();
    const float* hp = hc.f32();
    const float* sp = sc.f32();
    try {
      meta->set_state({hp, hp + hc.numel()}, {sp[0], sp[1], sp[2]});
    } catch (const Error& e) {
      throw Error(std::string(kFp8Prefix) + name + ": " + e.what());
    }
  }
}

}  // namespace mantissa::amp
