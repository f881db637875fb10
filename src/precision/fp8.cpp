#include "mantissa/precision/fp8.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::precision {

void Fp8Settings::validate() const {
  if (history_length < 1 || history_length > (1 << 16)) {
    throw Error("fp8.history_length: " + std::to_string(history_length) + " (expected 1 to 65536)");
  }
  if (margin < 0 || margin > 64) {
    throw Error("fp8.margin: " + std::to_string(margin) + " (expected 0 to 64)");
  }
}

Fp8Meta::Fp8Meta(const Fp8Settings& settings)
    : Fp8Meta(settings,
              {Format::float8_e4m3, Format::float8_e4m3,
               settings.recipe == Fp8Recipe::hybrid ? Format::float8_e5m2 : Format::float8_e4m3}) {}

Fp8Meta::Fp8Meta(const Fp8Settings& settings, const std::array<Format, kFp8Slots>& formats)
    : settings_(settings), formats_(formats) {
  settings_.validate();
  for (Format f : formats_) {
    if (f != Format::float8_e4m3 && f != Format::float8_e5m2) {
      throw Error("fp8 state: " + std::string(numerics::name(f)) +
                  " is not an fp8 format (expected float8_e4m3 or float8_e5m2)");
    }
  }
  history_.assign(static_cast<std::size_t>(kFp8Slots * settings_.history_length), 0.0f);
}

void Fp8Meta::record(Fp8Slot slot, float amax, std::int64_t overflows, std::int64_t underflows) {
  const int i = index(slot);
  if (!(amax <= amax_[i])) amax_[i] = amax;  // NaN sticks: the step then records no amax
  counts_[i].overflows += overflows;
  counts_[i].underflows += underflows;
}

void Fp8Meta::update() {
  const std::size_t len = static_cast<std::size_t>(settings_.history_length);
  for (int i = 0; i < kFp8Slots; ++i) {
    float* h = history_.data() + static_cast<std::size_t>(i) * len;
    std::rotate(h, h + len - 1, h + len);  // shift older entries back by one
    // A step whose tensor overflowed (inf, NaN) leaves no amax: it would hold the scale for a
    // whole history window.
    h[0] = std::isfinite(amax_[i]) ? amax_[i] : 0.0f;
    float amax = h[0];
    if (settings_.amax_compute == AmaxCompute::max) {
      for (std::size_t j = 1; j < len; ++j) amax = std::max(amax, h[j]);
    }
    const float max = static_cast<float>(numerics::traits(format(static_cast<Fp8Slot>(i))).max);
    if (amax > 0.0f && std::isfinite(amax)) {
      scale_[i] = std::ldexp(max / amax, -settings_.margin);
    }
    amax_[i] = 0.0f;
    last_[i] = counts_[i];
    counts_[i] = {};
  }
}

void Fp8Meta::set_state(const std::vector<float>& history,
                        const std::array<float, kFp8Slots>& scales) {
  if (history.size() != history_.size()) {
    throw Error("fp8 state: an amax history of " + std::to_string(history.size()) +
                " values (expected " + std::to_string(history_.size()) + " = 3 x history_length " +
                std::to_string(settings_.history_length) + ")");
  }
  for (float s : scales) {
    if (!(s > 0.0f) || !std::isfinite(s)) {
      throw Error("fp8 state: scale " + std::to_string(s) + " (expected a finite value > 0)");
    }
  }
  history_ = history;
  scale_ = scales;
}

}  // namespace mantissa::precision
