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

void apply_part(float* x, std::int64_t n, Part part) {
  if (part == Part::whole) return;
  for (std::int64_t i = 0; i < n; ++i) x[i] = part_value(x[i], part);
}

}  // namespace mantissa::kernels::gemm_detail
