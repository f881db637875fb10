#pragma once
// Internal. Splits an index range [0, n) over the OpenMP threads in contiguous chunks (multiples of
// 16 elements, so vector loops stay aligned to their lanes). Small ranges run on the calling
// thread: a parallel region costs a few microseconds. An exception thrown by fn on any thread
// is rethrown on the caller's once the region has ended (the first one; later chunks skipped).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>

namespace mantissa::kernels {

constexpr std::int64_t kParallelMinElements = 1 << 15;

// An exception may not leave an OpenMP region (the program would end in std::terminate): the
// threads run their work through run(), which keeps the first exception any of them throws
// and skips the work of later calls, and the caller rethrows it once the region has ended.
class FirstError {
 public:
  template <class Fn>
  void run(Fn&& fn) noexcept {
    if (failed()) return;
    try {
      fn();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
    }
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

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
  FirstError error;
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads();
    const std::int64_t chunk = ((n + threads - 1) / threads + align - 1) / align * align;
    const std::int64_t begin = std::min(n, chunk * omp_get_thread_num());
    const std::int64_t end = std::min(n, begin + chunk);
    if (begin < end) error.run([&] { fn(begin, end); });
  }
  error.rethrow();
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
  FirstError error;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < count; ++i) {
    error.run([&] { fn(i * piece, std::min(n, (i + 1) * piece)); });
  }
  error.rethrow();
}

}  // namespace mantissa::kernels
