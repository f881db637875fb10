#pragma once
// Internal. Splits an index range [0, n) over the OpenMP threads in contiguous chunks (multiples of
// 16 elements, so vector loops stay aligned to their lanes). Small ranges run on the calling
// thread: a parallel region costs a few microseconds.
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace mantissa::kernels {

constexpr std::int64_t kParallelMinElements = 1 << 15;

// fn(begin, end) is called once per chunk, concurrently from several threads. Chunks are
// multiples of `align` items: 16 for elements of vector loops; 1 where each item is a block
// of work itself (rows of tiles, runs of thousands of elements), or a range of fewer than 32
// such items would all fall to one thread.
template <class Fn>
void parallel_chunks(std::int64_t n, Fn&& fn, std::int64_t min_elements = kParallelMinElements,
                     std::int64_t align = 16) {
  if (n < min_elements || omp_in_parallel() || omp_get_max_threads() == 1) {
    if (n > 0) fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads();
    const std::int64_t chunk = ((n + threads - 1) / threads + align - 1) / align * align;
    const std::int64_t begin = std::min(n, chunk * omp_get_thread_num());
    const std::int64_t end = std::min(n, begin + chunk);
    if (begin < end) fn(begin, end);
  }
}

// As parallel_chunks, but in about `per_thread` pieces a thread, handed out as threads come
// free: a thread that the machine slows (another process, a busy neighbour) takes fewer
// pieces instead of holding the others at the region's end. fn(begin, end) may run several
// times on one thread, so it must not keep per-thread state across calls; pieces are
// multiples of `align` items, at least min_elements / 2 (but the last), at most
// per_thread a thread. Which thread takes which piece varies; the pieces do not.
template <class Fn>
void parallel_pieces(std::int64_t n, Fn&& fn, std::int64_t min_elements = kParallelMinElements,
                     std::int64_t align = 16, std::int64_t per_thread = 4) {
  const std::int64_t threads = omp_get_max_threads();
  if (n < min_elements || omp_in_parallel() || threads == 1) {
    if (n > 0) fn(std::int64_t{0}, n);
    return;
  }
  const std::int64_t smallest = std::max<std::int64_t>(align, min_elements / 2);
  const std::int64_t pieces = std::clamp<std::int64_t>(n / smallest, 1, threads * per_thread);
  const std::int64_t piece = ((n + pieces - 1) / pieces + align - 1) / align * align;
  const std::int64_t count = (n + piece - 1) / piece;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < count; ++i) fn(i * piece, std::min(n, (i + 1) * piece));
}

}  // namespace mantissa::kernels
