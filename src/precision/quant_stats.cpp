#include "mantissa/precision/quant_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::precision {
namespace {

// Counts one element of a rounding (x before, q the element value, x_in_elements x in the
// element's units); false when it stays out of the sums (x or q not finite).
bool tally(QuantCounts& c, const numerics::FormatTraits& t, float x, float q,
           double x_in_elements) {
  if (!std::isfinite(x)) {
    ++c.nonfinite;
    return false;
  }
  if (!std::isfinite(q)) {
    ++c.overflowed;
    return false;
  }
  const double magnitude = std::fabs(static_cast<double>(q));
  c.flushed += x != 0 && q == 0;
  c.subnormal += q != 0 && magnitude < t.min_normal;
  c.saturated += std::fabs(x_in_elements) > t.max && magnitude == t.max;
  return true;
}

}  // namespace

void QuantStats::add(const float* x, const float* q, std::int64_t n, double scale) {
  const numerics::FormatTraits& t = numerics::traits(format_);
  QuantCounts c;
  c.elements = n;
  for (std::int64_t i = 0; i < n; ++i) {
    const double xd = x[i], qd = q[i], scaled = xd * scale;
    if (!tally(c, t, x[i], q[i], scaled)) continue;
    const double error = scale == 1.0 ? xd - qd : (scaled - qd) / scale;
    signal_.add(xd * xd);
    noise_.add(error * error);
  }
  counts_ += c;
}

void QuantStats::add_elements(const float* x, const float* q, std::int64_t n,
                              const float* tile_scale, double tensor_scale) {
  const numerics::FormatTraits& t = numerics::traits(format_);
  QuantCounts c;
  c.elements = n;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(tile_scale[i]) * tensor_scale;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    const double xd = x[i];
    const float qi = std::isfinite(d) ? q[i] : std::numeric_limits<float>::quiet_NaN();
    if (!tally(c, t, x[i], qi, xd / d)) continue;
    const double error = xd - static_cast<double>(qi) * d;
    signal_.add(xd * xd);
    noise_.add(error * error);
  }
  if (lo <= hi) {
    note_scale(lo);
    note_scale(hi);
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
