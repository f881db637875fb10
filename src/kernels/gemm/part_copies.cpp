#include "part_copies.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <new>

#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels::gemm_detail {

PartCopies::PartCopies(const MatrixRef& x, std::int64_t rows, std::int64_t cols,
                       const std::array<bool, 3>& used, std::array<ScratchBuffer, 3>& room,
                       bool parallel) {
  for (int p = 0; p < 3; ++p) source_[static_cast<std::size_t>(p)] = {x, static_cast<Part>(p)};
  const auto needs_copy = [&](int p) {
    const auto part = static_cast<Part>(p);
    return used[static_cast<std::size_t>(p)] &&
           (x.x.format != Format::bfloat16 || part == Part::lo);
  };
  std::array<std::uint16_t*, 3> out{};
  bool any = false;
  for (int p = 0; p < 3; ++p) {
    if (!needs_copy(p)) continue;
    out[static_cast<std::size_t>(p)] = room[static_cast<std::size_t>(p)].as<std::uint16_t>(
        static_cast<std::size_t>(std::max<std::int64_t>(rows * x.ld, 1)));
    source_[static_cast<std::size_t>(p)] = {
        MatrixRef{Operand(out[static_cast<std::size_t>(p)], Format::bfloat16), x.trans, x.ld},
        Part::whole};
    any = true;
  }
  if (!any) return;
  const std::size_t bytes = static_cast<std::size_t>(numerics::traits(x.x.format).storage_bytes);
  const auto* base = static_cast<const char*>(x.x.data);
  // Row by row: decoded to float32 in a row buffer, then each part's bits from it. A row
  // buffer that cannot be had is agreed on after the region (nothing throws inside it).
  std::atomic<bool> failed{false};
#pragma omp parallel if (parallel && rows * cols >= (std::int64_t{1} << 16))
  {
    thread_local ScratchBuffer row_room;
    float* row = nullptr;
    try {
      row = row_room.as<float>(static_cast<std::size_t>(std::max<std::int64_t>(cols, 1)));
    } catch (const std::bad_alloc&) {
      failed.store(true);
    }
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      if (row == nullptr) continue;
      numerics::decode_array(base + static_cast<std::size_t>(r * x.ld) * bytes,
                             static_cast<std::size_t>(cols), x.x.format, row);
      for (std::size_t p = 0; p < 3; ++p) {
        if (out[p] != nullptr) part_bits(row, cols, static_cast<Part>(p), out[p] + r * x.ld);
      }
    }
  }
  if (failed.load()) throw std::bad_alloc();
}

}  // namespace mantissa::kernels::gemm_detail
