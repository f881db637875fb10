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

}  // namespace mantissa::kernels
