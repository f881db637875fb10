#include "mantissa/precision/quant_stats.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::precision {

void QuantStats::add(const float* x, const float* q, std::int64_t n, double scale) {
  const numerics::FormatTraits& t = numerics::traits(format_);
  QuantCounts c;
  c.elements = n;
  for (std::int64_t i = 0; i < n; ++i) {
    const float xi = x[i], qi = q[i];
    if (!std::isfinite(xi)) {
      ++c.nonfinite;
      continue;
    }
    if (!std::isfinite(qi)) {
      ++c.overflowed;
      continue;
    }
    const double xd = xi, qd = qi;
    const double scaled = xd * scale, magnitude = std::fabs(qd);
    c.flushed += xi != 0 && qi == 0;
    c.subnormal += qi != 0 && magnitude < t.min_normal;
    c.saturated += std::fabs(scaled) > t.max && magnitude == t.max;
    const double error = scale == 1.0 ? xd - qd : (scaled - qd) / scale;
    signal_.add(xd * xd);
    noise_.add(error * error);
  }
  counts_ += c;
}

void QuantStats::note_scale(double scale) {
  if (!scale_) {
    scale_ = ScaleRange{scale, scale};
    return;
  }
  scale_->min = std::min(scale_->min, scale);
  scale_->max = std::max(scale_->max, scale);
}

void QuantStats::merge(const QuantStats& other) {
  if (other.format_ != format_) {
    throw Error("precision statistics: cannot merge roundings to " +
                std::string(numerics::name(other.format_)) + " into those to " +
                std::string(numerics::name(format_)));
  }
  counts_ += other.counts_;
  signal_.add(other.signal_);
  noise_.add(other.noise_);
  if (other.scale_) {
    note_scale(other.scale_->min);
    note_scale(other.scale_->max);
  }
}

std::optional<double> QuantStats::snr_db() const {
  if (noise_.is_zero()) return std::nullopt;
  return 10.0 * std::log10(signal_.value() / noise_.value());
}

}  // namespace mantissa::precision
