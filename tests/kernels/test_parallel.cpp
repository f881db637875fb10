// parallel_chunks and parallel_pieces: every index of [0, n) handed out exactly once, in
// ranges of whole `align` items, on several threads where the range is large enough.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "mantissa/kernels/parallel.hpp"

namespace k = mantissa::kernels;
namespace {

struct Handed {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::vector<int> threads;
};

template <class Split>
Handed hand_out(std::int64_t n, Split&& split) {
  Handed h;
  std::mutex m;
  split(n, [&](std::int64_t b, std::int64_t e) {
    const std::lock_guard<std::mutex> lock(m);
    h.ranges.emplace_back(b, e);
    h.threads.push_back(omp_get_thread_num());
  });
  std::sort(h.ranges.begin(), h.ranges.end());
  return h;
}

// The ranges tile [0, n) without gap or overlap, each a multiple of align but the last.
void expect_tiling(const Handed& h, std::int64_t n, std::int64_t align) {
  std::int64_t next = 0;
  for (std::size_t i = 0; i < h.ranges.size(); ++i) {
    const auto [b, e] = h.ranges[i];
    EXPECT_EQ(b, next) << "range " << i;
    EXPECT_LT(b, e) << "range " << i;
    if (e != n) {
      EXPECT_EQ((e - b) % align, 0) << "range " << i;
    }
    next = e;
  }
  EXPECT_EQ(next, n);
}

TEST(ParallelPieces, EveryIndexOnceInAlignedPiecesOnEveryThread) {
  const int threads = omp_get_max_threads();
  for (const std::int64_t n :
       {std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 20, (std::int64_t{1} << 20) + 7}) {
    for (const std::int64_t align : {std::int64_t{1}, std::int64_t{16}}) {
      const Handed h = hand_out(n, [&](std::int64_t m, auto&& fn) {
        k::parallel_pieces(m, fn, k::kParallelMinElements, align);
      });
      expect_tiling(h, n, align);
      if (n < k::kParallelMinElements) {
        EXPECT_EQ(h.ranges.size(), 1u) << n;  // small ranges: one call on the caller
      } else if (threads > 1) {
        // 2^20 items: enough for the most pieces, 4 a thread.
        EXPECT_EQ(h.ranges.size(), static_cast<std::size_t>(4 * threads)) << n;
        EXPECT_LE(h.ranges.size(), static_cast<std::size_t>(4 * threads)) << n;
      }
    }
  }
}

TEST(ParallelPieces, PiecesAreNotSmallerThanHalfTheMinimum) {
  // 10 items of which 4 make the minimum: pieces of at least 2 (but the last), so at most 5.
  const Handed h = hand_out(10, [](std::int64_t m, auto&& fn) { k::parallel_pieces(m, fn, 4, 1); });
  expect_tiling(h, 10, 1);
  EXPECT_LE(h.ranges.size(), 5u);
  for (const auto& [b, e] : h.ranges) {
    if (e != 10) {
      EXPECT_GE(e - b, 2);
    }
  }
}

TEST(ParallelPieces, InsideAParallelRegionRunsOnTheCallingThread) {
  std::atomic<int> calls{0};
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    k::parallel_pieces(std::int64_t{1} << 20, [&](std::int64_t b, std::int64_t e) {
      EXPECT_EQ(b, 0);
      EXPECT_EQ(e, std::int64_t{1} << 20);
      calls.fetch_add(1);
    });
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(ParallelChunks, EveryIndexOnceOneChunkAThread) {
  const std::int64_t n = (std::int64_t{1} << 20) + 5;
  const Handed h = hand_out(n, [](std::int64_t m, auto&& fn) { k::parallel_chunks(m, fn); });
  expect_tiling(h, n, 16);
  EXPECT_LE(h.ranges.size(), static_cast<std::size_t>(omp_get_max_threads()));
  std::vector<int> t = h.threads;
  std::sort(t.begin(), t.end());
  EXPECT_EQ(std::adjacent_find(t.begin(), t.end()), t.end());  // no thread twice
}

}  // namespace
