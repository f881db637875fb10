#pragma once
// What a rounding lost, measured over two buffers (precision/quant_stats.hpp): src holds n
// values as they were before (any format), dst the same n values after the rounding, in the
// format rounded to (one element per traits(format).storage_bytes: fp4 unpacked), with
// dst ~ src * scale. Used on sampled steps only (precision/quant_probe.hpp).
#include <cstdint>

#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/quant_stats.hpp"

namespace mantissa::quant {

// On all threads (unless inside a parallel region); the sums are exact, so the result is the
// same bits as the twin's.
precision::QuantStats measure_quantization(const void* src, numerics::Format src_format,
                                           const void* dst, numerics::Format dst_format,
                                           std::int64_t n, double scale = 1.0);
// The scalar twin: one element at a time through the scalar codec.
precision::QuantStats measure_quantization_ref(const void* src, numerics::Format src_format,
                                               const void* dst, numerics::Format dst_format,
                                               std::int64_t n, double scale = 1.0);

}  // namespace mantissa::quant
