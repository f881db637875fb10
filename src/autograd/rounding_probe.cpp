#include "rounding_probe.hpp"

#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/quant/quant_measure.hpp"

namespace mantissa::autograd::detail {

RoundingProbe::RoundingProbe(precision::QuantRole role, const char* op,
                             const precision::LayerName& layer)
    : probe_(precision::active_probe()) {
  if (probe_ != nullptr) site_ = {layer, op, role};
}

void RoundingProbe::rounded(const Tensor& before, const Tensor& after, double scale,
                            bool note_scale) const {
  if (probe_ == nullptr || before.format() == after.format() ||
      after.format() == numerics::Format::float32) {
    return;
  }
  const Tensor b = before.contiguous(), a = after.contiguous();
  precision::QuantStats s = quant::measure_quantization(b.raw_data(), b.format(), a.raw_data(),
                                                        a.format(), a.numel(), scale);
  if (note_scale) s.note_scale(scale);
  probe_->record(site_, s);
}

void RoundingProbe::add_written(precision::QuantStats& into, const float* v, const Tensor& t,
                                std::int64_t at, std::int64_t n) const {
  thread_local std::vector<float> q;  // what was written, decoded
  q.resize(static_cast<std::size_t>(n));
  const char* written = static_cast<const char*>(t.raw_data()) + at * t.element_bytes();
  numerics::decode_array(written, static_cast<std::size_t>(n), t.format(), q.data());
  into.add(v, q.data(), n);
}

void RoundingProbe::record(const precision::QuantStats& stats) const {
  if (probe_ != nullptr && stats.counts().elements > 0) probe_->record(site_, stats);
}

}  // namespace mantissa::autograd::detail
