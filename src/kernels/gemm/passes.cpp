#include "passes.hpp"

#include <string>

#include "mantissa/error.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

bool splits(Format f) {
  return f == Format::float16 || f == Format::cbfloat16;
}

}  // namespace

PassList passes_for(const GemmPrecision& p, bool native) {
  if (p.passes != 1 && p.passes != 3 && p.passes != 4) {
    throw Error("gemm: passes must be 1, 3 or 4 (got " + std::to_string(p.passes) + ")");
  }
  PassList list;
  // float32, bfloat16 and the fp8 formats are bf16 values already (or not split at all).
  if (!splits(p.format)) return list;
  // The fp32 FMA route multiplies float16 / cbfloat16 values exactly in one pass; only POL 2
  // (one pass) changes the values: inputs rounded to bfloat16.
  const bool decompose = native || p.algorithm == GemmAlgorithm::decomposed || p.passes == 1;
  if (!decompose) return list;
  // Pass order (A part, B part): (hi, hi), (hi, lo), (lo, hi), (lo, lo).
  constexpr Pass kOrder[4] = {
      {Part::hi, Part::hi}, {Part::hi, Part::lo}, {Part::lo, Part::hi}, {Part::lo, Part::lo}};
  list.count = p.passes;
  for (int i = 0; i < p.passes; ++i) list.pass[i] = kOrder[i];
  return list;
}

namespace {

// bf16_nearest on the bits, a NaN quieted instead of kept: branch-free, so that the loops
// below vectorize.
inline std::uint32_t nearest_bits(std::uint32_t u) {
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) : r;
}

template <Part kPart>
void bits_of(const float* x, std::int64_t n, std::uint16_t* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x[i]);
    std::uint32_t b;
    if constexpr (kPart == Part::whole) {
      b = (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) : u;
    } else if constexpr (kPart == Part::hi) {
      b = nearest_bits(u);
    } else {  // x - hi rounded; 0 where x is not finite
      const float d = x[i] - std::bit_cast<float>(nearest_bits(u));
      const std::uint32_t finite =
          0u - static_cast<std::uint32_t>((u & 0x7f800000u) != 0x7f800000u);
      b = nearest_bits(std::bit_cast<std::uint32_t>(d)) & finite;
    }
    out[i] = static_cast<std::uint16_t>(b >> 16);
  }
}

}  // namespace

void part_bits(const float* x, std::int64_t n, Part part, std::uint16_t* out) {
  switch (part) {
    case Part::whole:
      bits_of<Part::whole>(x, n, out);
      return;
    case Part::hi:
      bits_of<Part::hi>(x, n, out);
      return;
    case Part::lo:
      bits_of<Part::lo>(x, n, out);
      return;
  }
}

void apply_part(float* x, std::int64_t n, Part part) {
  if (part == Part::whole) return;
  for (std::int64_t i = 0; i < n; ++i) x[i] = part_value(x[i], part);
}

}  // namespace mantissa::kernels::gemm_detail
