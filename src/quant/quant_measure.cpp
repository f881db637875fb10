#include "mantissa/quant/quant_measure.hpp"

#include <algorithm>
#include <mutex>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::quant {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

using numerics::Format;

const char* at(const void* base, Format f, std::int64_t i) {
  return static_cast<const char*>(base) + i * numerics::traits(f).storage_bytes;
}

// Elements [begin, end) decoded a block at a time into stack buffers (float32 read in place).
void measure_range(const void* src, Format src_format, const void* dst, Format dst_format,
                   std::int64_t begin, std::int64_t end, double scale, precision::QuantStats& s) {
  constexpr std::int64_t kBlock = 1024;
  float x[kBlock], q[kBlock];
  for (std::int64_t b = begin; b < end; b += kBlock) {
    const std::int64_t len = std::min(kBlock, end - b);
    const auto count = static_cast<std::size_t>(len);
    const float* xs = x;
    if (src_format == Format::float32) {
      xs = reinterpret_cast<const float*>(at(src, src_format, b));
    } else {
      numerics::decode_array(at(src, src_format, b), count, src_format, x);
    }
    numerics::decode_array(at(dst, dst_format, b), count, dst_format, q);
    s.add(xs, q, len, scale);
  }
}

}  // namespace

precision::QuantStats measure_quantization(const void* src, Format src_format, const void* dst,
                                           Format dst_format, std::int64_t n, double scale) {
  precision::QuantStats total(dst_format);
  std::mutex mutex;
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    precision::QuantStats part(dst_format);
    measure_range(src, src_format, dst, dst_format, begin, end, scale, part);
    const std::lock_guard<std::mutex> lock(mutex);
    total.merge(part);
  });
  return total;
}

precision::QuantStats measure_quantization_ref(const void* src, Format src_format, const void* dst,
                                               Format dst_format, std::int64_t n, double scale) {
  precision::QuantStats s(dst_format);
  for (std::int64_t i = 0; i < n; ++i) {
    float x = 0, q = 0;
    numerics::decode_array_ref(at(src, src_format, i), 1, src_format, &x);
    numerics::decode_array_ref(at(dst, dst_format, i), 1, dst_format, &q);
    s.add(&x, &q, 1, scale);
  }
  return s;
}

}  // namespace mantissa::quant
