#pragma once
// Internal: a pair kernel's operand stored in another format than bfloat16 (float16 and
// cbfloat16 split into hi / lo parts, fp8, float32 holding bfloat16 values), converted once
// per product into one bfloat16 matrix per part its passes read, laid out as the operand is
// (same rows, leading dimension and orientation). Its pair panels are then made straight
// from bfloat16 storage (pair_panel_bf16, pair_panels_bf16_across) instead of being decoded
// into a float32 panel and paired again in every depth block of every pass.
#include <array>
#include <cstdint>

#include "mantissa/kernels/scratch.hpp"
#include "packing.hpp"

namespace mantissa::kernels::gemm_detail {

// Where a pass reads one part of an operand: the operand itself with the part applied while
// packing, or its bfloat16 copy of that part read whole.
struct PartSource {
  MatrixRef x;
  Part part = Part::whole;
};

class PartCopies {
 public:
  PartCopies() = default;
  // The operand x, whose storage holds `rows` rows of `cols` elements `x.ld` apart: a
  // bfloat16 copy of each part in `used` (indexed by Part) where x is not stored as bfloat16
  // or the part is lo, made on all threads when `parallel`. The copies live in `room`
  // (one scratch buffer per part) until the next call with the same room.
  PartCopies(const MatrixRef& x, std::int64_t rows, std::int64_t cols,
             const std::array<bool, 3>& used, std::array<ScratchBuffer, 3>& room, bool parallel);
  PartSource source(Part p) const { return source_[static_cast<int>(p)]; }

 private:
  std::array<PartSource, 3> source_;
};

}  // namespace mantissa::kernels::gemm_detail
