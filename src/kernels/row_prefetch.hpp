#pragma once
// Internal. Strided rows converted one short row at a time (a head's 64 values, 128 or 256
// bytes, rows kilobytes apart) wait on memory row after row: each row is two to four cache
// lines the hardware prefetchers do not fetch ahead across pages. Touching the row a few
// rows ahead first keeps several rows' lines on their way (on an AMD Zen 3, decoding a bfloat16
// head's five operands took a third of the time; bench_gemm's attention gpt_ref_layout rows).
#include <cstdint>

namespace mantissa::kernels {

// How many rows ahead the loops below touch.
inline constexpr std::int64_t kPrefetchRows = 6;

// Asks for the cache lines of [p, p + bytes): to read, or to write (`write`).
inline void prefetch_bytes(const void* p, std::int64_t bytes, bool write) {
  const auto* c = static_cast<const char*>(p);
  for (std::int64_t b = 0; b < bytes; b += 64) {
    if (write) {
      __builtin_prefetch(c + b, 1);
    } else {
      __builtin_prefetch(c + b, 0);
    }
  }
}

// Row r + kPrefetchRows of `rows` rows starting at base, `stride` bytes apart, `bytes` long.
inline void prefetch_row_ahead(const void* base, std::int64_t r, std::int64_t rows,
                               std::int64_t stride, std::int64_t bytes, bool write) {
  if (r + kPrefetchRows < rows) {
    prefetch_bytes(static_cast<const char*>(base) + (r + kPrefetchRows) * stride, bytes, write);
  }
}

}  // namespace mantissa::kernels
