#include "mantissa/dist/reduction.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::dist {
namespace {

numerics::Format format_of(WireFormat wire) {
  return wire == WireFormat::float32 ? numerics::Format::float32 : numerics::Format::bfloat16;
}

}  // namespace

int wire_bytes(WireFormat wire) {
  return wire == WireFormat::float32 ? 4 : 2;
}

void encode_wire(const float* src, std::int64_t n, WireFormat wire, void* dst) {
  if (wire == WireFormat::float32) {
    if (n != 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    numerics::encode_array(src, static_cast<std::size_t>(n), format_of(wire), dst);
  }
}

void decode_wire(const void* src, std::int64_t n, WireFormat wire, float* dst) {
  if (wire == WireFormat::float32) {
    if (n != 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    numerics::decode_array(src, static_cast<std::size_t>(n), format_of(wire), dst);
  }
}

namespace {

// The sum in rank order, then (when `average`) one multiplication by fl(1/N).
void reduce_in_rank_order(const std::vector<const void*>& contributions, std::int64_t n,
                          WireFormat wire, bool average, void* out) {
  if (contributions.empty()) throw Error("dist: a reduction of no contributions");
  const float inverse = 1.0f / static_cast<float>(contributions.size());
  const std::int64_t bytes = wire_bytes(wire);
  // Block by block, so the partial sums stay in cache; each block is read whole before it is
  // written, so `out` may be a contribution.
  constexpr std::int64_t kBlock = 2048;
  float sum[kBlock];
  float next[kBlock];
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t m = std::min(kBlock, n - start);
    const auto at = [&](const void* p) { return static_cast<const std::byte*>(p) + start * bytes; };
    decode_wire(at(contributions[0]), m, wire, sum);
    for (std::size_t r = 1; r < contributions.size(); ++r) {
      decode_wire(at(contributions[r]), m, wire, next);
      for (std::int64_t i = 0; i < m; ++i) sum[i] += next[i];
    }
    if (average) {
      for (std::int64_t i = 0; i < m; ++i) sum[i] *= inverse;
    }
    encode_wire(sum, m, wire, static_cast<std::byte*>(out) + start * bytes);
  }
}

}  // namespace

void average_in_rank_order(const std::vector<const void*>& contributions, std::int64_t n,
                           WireFormat wire, void* out) {
  reduce_in_rank_order(contributions, n, wire, true, out);
}

void sum_in_rank_order(const std::vector<const void*>& contributions, std::int64_t n,
                       WireFormat wire, void* out) {
  reduce_in_rank_order(contributions, n, wire, false, out);
}

}  // namespace mantissa::dist
