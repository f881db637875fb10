#pragma once
// What travels on the wire in a gradient all-reduce, and how the contributions are summed.
// Float32 sends the gradients as they are; bfloat16 rounds them (nearest-even) for the wire,
// halving the bytes, and sums them in float32 all the same. The sum is taken in rank order,
// whatever order the contributions arrived in, then multiplied by 1/N once: the result is a
// function of the inputs alone, never of timing.
#include <cstdint>
#include <vector>

#include "mantissa/names.hpp"

namespace mantissa::dist {

enum class WireFormat : std::uint8_t { float32, bfloat16 };
inline constexpr NameTable<WireFormat, 2> kWireFormatNames = {{
    {"float32", WireFormat::float32},
    {"bfloat16", WireFormat::bfloat16},
}};
static_assert(in_enum_order(kWireFormatNames, static_cast<std::size_t>(WireFormat::bfloat16) + 1));
int wire_bytes(WireFormat wire);  // 4 or 2

// float32 -> wire (nearest-even; inf and NaN stay what they are) and back (exact).
void encode_wire(const float* src, std::int64_t n, WireFormat wire, void* dst);
void decode_wire(const void* src, std::int64_t n, WireFormat wire, float* dst);

// out[i] = wire(fl(fl(...fl(c_0[i] + c_1[i]) + ... + c_{N-1}[i]) * fl(1/N))) for the N
// contributions c_r (in the wire format, rank r's at contributions[r]), every operation in
// float32. `out` may be one of the contributions.
void average_in_rank_order(const std::vector<const void*>& contributions, std::int64_t n,
                           WireFormat wire, void* out);
// The same without the multiplication: out[i] = wire(fl(...fl(c_0[i] + c_1[i]) + ...)), for
// contributions already weighted (each rank's gradient of its share of the global loss).
void sum_in_rank_order(const std::vector<const void*>& contributions, std::int64_t n,
                       WireFormat wire, void* out);

}  // namespace mantissa::dist
