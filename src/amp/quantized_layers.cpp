#include "mantissa/amp/quantized_layers.hpp"

#include <algorithm>

#include "layer_patterns.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/layers.hpp"
#include "mantissa/numerics/block_scaling.hpp"

namespace mantissa::amp {
namespace {

using precision::kFp8Slots;

constexpr std::int64_t kSigns = 16;

std::string slot_name(int slot) {
  return std::string(name_of(precision::kFp8SlotNames, static_cast<precision::Fp8Slot>(slot)));
}

// A quantized layer's features must be whole blocks unless the recipe pads them.
void check_blocks(const std::string& layer, const nn::Linear& linear,
                  const precision::LayerRecipe& r, bool block_size_given) {
  if (!precision::has_blocks(r.recipe) || r.pad_blocks) return;
  const std::int64_t out = linear.weight.shape()[0], in = linear.weight.shape()[1];
  for (const auto& [what, n] : {std::pair{"in_features", in}, std::pair{"out_features", out}}) {
    if (n % r.block_size == 0) continue;
    const std::string recipe(name_of(precision::kRecipeNames, r.recipe));
    const std::string key =
        r.recipe == precision::Recipe::nvfp4 ? "recipe.name" : "recipe.block_size";
    const std::string size = r.recipe == precision::Recipe::nvfp4
                                 ? "nvfp4's blocks of 16"
                                 : std::to_string(r.block_size) +
                                       (block_size_given ? "" : " (the " + recipe + " default)");
    throw Error(key + ": " + size + " do not divide " + layer + "'s " + what + " " +
                std::to_string(n) +
                " (a row's blocks must tile the layer's features: choose a block size that "
                "divides them, keep the layer out with recipe.layers, or set "
                "recipe.pad_blocks: true to end each row with a shorter block)");
  }
}

}  // namespace

QuantizedLayers::QuantizedLayers(nn::Module& root, const precision::Fp8Settings& settings) {
  if (settings.enabled) attach(root, precision::delayed_recipe(settings), 0);
}

QuantizedLayers::QuantizedLayers(nn::Module& root, const precision::RecipeSettings& settings,
                                 std::uint64_t seed) {
  attach(root, settings, seed);
}

void QuantizedLayers::attach(nn::Module& root, const precision::RecipeSettings& settings,
                             std::uint64_t seed) {
  settings.validate();
  std::vector<std::string> names;
  for (const auto& [name, p] : root.named_parameters()) names.push_back(name);
  for (std::size_t i = 0; i < settings.layers.size(); ++i) {
    detail::require_match(settings.layers[i].match, names,
                          "recipe.layers[" + std::to_string(i) + "].match");
  }
  stream_ = std::make_shared<precision::StochasticStream>(seed);
  for (const auto& [name, linear] : nn::linear_layers(root)) {
    LayerPlan plan{name, std::nullopt, -1};
    std::optional<precision::Recipe> recipe = settings.recipe;
    std::vector<std::string> own{name + ".weight"};
    if (linear->bias.defined()) own.push_back(name + ".bias");
    for (std::size_t i = 0; i < settings.layers.size(); ++i) {
      if (detail::matches_any(settings.layers[i].match, own)) {
        recipe = settings.layers[i].recipe;
        plan.override_index = static_cast<int>(i);
        break;
      }
    }
    linear->quant.reset();
    if (recipe) {
      plan.recipe = precision::resolve(settings, *recipe);
      check_blocks(name, *linear, *plan.recipe, settings.block_size.has_value());
      linear->quant = std::make_shared<precision::LinearQuant>(*plan.recipe, stream_);
      if (linear->quant->delayed()) delayed_.emplace_back(name, linear->quant->delayed());
      ++quantized_;
    }
    plan_.push_back(std::move(plan));
  }
  window_.assign(delayed_.size() * kFp8Slots, {});
}

std::vector<std::string> QuantizedLayers::describe_plan() const {
  // Distinct choices in order of first appearance, each with its layers.
  std::vector<std::pair<std::string, std::vector<const LayerPlan*>>> groups;
  for (const LayerPlan& p : plan_) {
    const std::string what =
        p.recipe ? p.recipe->describe()
                 : std::string(precision::kNoRecipeWord) + " (the policy's half format)";
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == what; });
    if (it == groups.end()) it = groups.insert(groups.end(), {what, {}});
    it->second.push_back(&p);
  }
  std::vector<std::string> lines;
  for (const auto& [what, layers] : groups) {
    std::string line =
        what + ": " + std::to_string(layers.size()) + " layer" + (layers.size() == 1 ? "" : "s");
    if (layers.front()->override_index >= 0) {
      line += " (";
      for (std::size_t i = 0; i < layers.size(); ++i)
        line += (i == 0 ? "" : ", ") + layers[i]->layer;
      line += ")";
    }
    lines.push_back(line);
  }
  return lines;
}

void QuantizedLayers::set_stochastic_position(std::uint64_t p) {
  if (stream_) stream_->set_position(p);
}

bool QuantizedLayers::rounds_stochastically() const {
  return std::any_of(plan_.begin(), plan_.end(),
                     [](const LayerPlan& p) { return p.recipe && p.recipe->stochastic_rounding; });
}

void QuantizedLayers::update(const Agreement& agree) {
  if (agree && !delayed_.empty()) {
    std::vector<float> amax;
    std::vector<std::int64_t> counts;
    for (const auto& [name, meta] : delayed_) {
      const precision::Fp8Meta::StepFigures f = meta->step_figures();
      for (int s = 0; s < kFp8Slots; ++s) {
        amax.push_back(f.amax[static_cast<std::size_t>(s)]);
        counts.push_back(f.counts[static_cast<std::size_t>(s)].overflows);
        counts.push_back(f.counts[static_cast<std::size_t>(s)].underflows);
      }
    }
    agree(amax, counts);
    std::size_t a = 0, c = 0;
    for (const auto& [name, meta] : delayed_) {
      precision::Fp8Meta::StepFigures f;
      for (int s = 0; s < kFp8Slots; ++s) {
        f.amax[static_cast<std::size_t>(s)] = amax[a++];
        f.counts[static_cast<std::size_t>(s)] = {counts[c], counts[c + 1]};
        c += 2;
      }
      meta->set_step_figures(f);
    }
  }
  for (std::size_t l = 0; l < delayed_.size(); ++l) {
    precision::Fp8Meta& meta = *delayed_[l].second;
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

precision::Fp8WindowCounts QuantizedLayers::take_window() {
  precision::Fp8WindowCounts out;
  for (std::size_t l = 0; l < delayed_.size(); ++l) {
    for (int s = 0; s < kFp8Slots; ++s) {
      precision::Fp8Meta::Counts& w = window_[l * kFp8Slots + static_cast<std::size_t>(s)];
      out.overflows += w.overflows;
      out.underflows += w.underflows;
      if (w.overflows != 0 || w.underflows != 0) {
        out.tensors.push_back({delayed_[l].first + "." + slot_name(s), w.overflows, w.underflows});
      }
      w = {};
    }
  }
  return out;
}

std::map<std::string, tensor::Tensor> QuantizedLayers::state_tensors() const {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [name, meta] : delayed_) {
    const std::int64_t h = meta->settings().history_length;
    out[name + ".amax_history"] = tensor::Tensor::from_vector(meta->history(), {kFp8Slots, h});
    const auto& s = meta->scales();
    out[name + ".scale"] = tensor::Tensor::from_vector({s.begin(), s.end()}, {kFp8Slots});
  }
  if (std::any_of(plan_.begin(), plan_.end(),
                  [](const LayerPlan& p) { return p.recipe && p.recipe->hadamard; })) {
    out["hadamard_signs"] = tensor::Tensor::from_vector(
        {std::begin(numerics::kNvfp4HadamardSigns), std::end(numerics::kNvfp4HadamardSigns)},
        {kSigns});
  }
  return out;
}

void QuantizedLayers::load_state_tensors(const std::map<std::string, tensor::Tensor>& state) {
  for (const auto& [name, meta] : delayed_) {
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
  const std::map<std::string, tensor::Tensor> ours = state_tensors();
  if (const auto want = ours.find("hadamard_signs"); want != ours.end()) {
    const auto got = state.find("hadamard_signs");
    if (got == state.end()) {
      throw Error(std::string(kFp8Prefix) +
                  "hadamard_signs: not in the checkpoint, but this run rotates nvfp4 gradients");
    }
    if (got->second.shape() != tensor::Shape{kSigns} ||
        got->second.to_vector() != want->second.to_vector()) {
      throw Error(std::string(kFp8Prefix) +
                  "hadamard_signs: the checkpoint's rotation signs differ from this build's "
                  "(a resumed run would not rotate as the run it continues)");
    }
  }
}

}  // namespace mantissa::amp
