#include "blocked_gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <new>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "packing.hpp"
#include "part_copies.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

struct Blocking {
  std::int64_t kc;  // depth of a packed block
  std::int64_t mc;  // rows of A packed at once (a multiple of mr)
  std::int64_t nc;  // columns of B packed at once (a multiple of nr)
  std::int64_t mb;  // rows of C per chunk (a multiple of mc): B is packed once per chunk
};

Blocking blocking_for(const MicroKernelInfo& kern) {
  if (kern.a_rows) return {512, 256, 1024, 768};  // AMX: deep blocks, C loaded once per block
  switch (kern.isa) {
    case GemmIsa::avx512:
      return {256, 192, 2048, 768};
    case GemmIsa::avx2:  // 384 deep: a 384-deep product (GPT-ref's) is one depth block
      return {384, 96, 1024, 768};
    case GemmIsa::scalar:
      break;
  }
  return {128, 64, 256, 1024};
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

struct ThreadScratch {
  ScratchBuffer a, b, c, panel;
};
ThreadScratch& thread_scratch() {
  thread_local ThreadScratch s;
  return s;
}
// The calling thread's bfloat16 copies of operands stored otherwise (PartCopies): an
// operand's size each.
struct OperandRooms {
  std::array<ScratchBuffer, 3> a, b;
};
OperandRooms& operand_rooms() {
  thread_local OperandRooms rooms;
  return rooms;
}
struct Job {
  GemmShape s;
  PartCopies a_parts, b_parts;  // the operands, each part where its passes read it
  PassList passes;
  const GemmEpilogue* epilogue;
  MicroKernelInfo kern;
  Blocking bl;
  bool one_depth;  // one depth block and one pass (chunk_rows)
  std::atomic<bool>* failed;
  FirstError* epilogue_error;  // the first exception an epilogue threw (later tiles skipped)
};

// [begin, end) of `count` items for part t of `parts`, as even as possible.
std::pair<std::int64_t, std::int64_t> share(std::int64_t count, int t, int parts) {
  return {count * t / parts, count * (t + 1) / parts};
}

void barrier(int threads) {
  if (threads > 1) {
#pragma omp barrier
  }
}

// How the threads share a chunk of C (rows x cols): a grid of r row parts by c column parts,
// thread t the cell (t / c, t % c) (threads past r c idle). Each thread packs its own cell's A
// rows and B panels, so no thread waits for another inside a product (on a busy machine a
// barrier per depth block, with B packed once and shared, made every thread wait for the
// slowest at each one); per depth block a thread packs rows / r + cols / c lines beside its
// rows * cols / (r c) products. The grid keeps the most threads busy (no part without
// panels), then packs the least; on a tie, more row parts. On two threads: the rows split
// when there are at least as many as columns, else the columns.
struct Grid {
  std::int64_t r = 1, c = 1;
};
Grid grid_for(int threads, std::int64_t rows, std::int64_t cols, int mr, int nr) {
  const std::int64_t row_panels = ceil_div(rows, mr), col_panels = ceil_div(cols, nr);
  Grid best;
  std::int64_t best_busy = 0;
  double best_lines = 0;
  for (std::int64_t r = threads; r >= 1; --r) {
    const Grid g{std::min(r, row_panels), std::min<std::int64_t>(threads / r, col_panels)};
    const std::int64_t busy = g.r * g.c;
    const double lines = static_cast<double>(rows) / static_cast<double>(g.r) +
                         static_cast<double>(cols) / static_cast<double>(g.c);
    if (busy > best_busy || (busy == best_busy && lines < best_lines)) {
      best = g;
      best_busy = busy;
      best_lines = lines;
    }
  }
  return best;
}

// Depth blocks of (nearly) equal size, a multiple of 8 where possible (of the pair kernel's
// chunk where it has one: every block's chunks then start where the whole reduction's do).
std::int64_t depth_of(const GemmShape& s, const MicroKernelInfo& kern, const Blocking& bl) {
  const std::int64_t align = std::max(8, 2 * kern.pair_block);
  return std::min(s.k, (ceil_div(s.k, ceil_div(s.k, bl.kc)) + align - 1) / align * align);
}

// Whether a product is one depth block in one pass: each mc block of C is then finished as
// soon as it is made and goes to the epilogue, so one mc block's room serves them all, and
// the whole product is one chunk (B packed once); else chunks of mb rows keep a thread's C
// block in cache between depth blocks and passes.
std::int64_t chunk_rows(const GemmShape& s, const Blocking& bl, bool one_depth) {
  return one_depth ? s.m : std::min(bl.mb, s.m);
}

// The largest C block one thread holds: its cell of a chunk (an mc block of its rows in a
// one-depth product) by its columns of a column block.
std::int64_t c_block_floats(const GemmShape& s, const MicroKernelInfo& kern, const Blocking& bl,
                            int threads, bool one_depth) {
  const std::int64_t cols = std::min(bl.nc, s.n);
  std::int64_t most = 1;
  // The chunks are whole ones and a last, shorter one.
  for (const std::int64_t rows :
       {chunk_rows(s, bl, one_depth), s.m % chunk_rows(s, bl, one_depth)}) {
    if (rows == 0) continue;
    const Grid g = grid_for(threads, rows, cols, kern.mr, kern.nr);
    std::int64_t cell_rows = ceil_div(ceil_div(rows, kern.mr), g.r) * kern.mr;
    if (one_depth) cell_rows = std::min(cell_rows, ceil_div(bl.mc, kern.mr) * kern.mr);
    const std::int64_t cell_cols = ceil_div(ceil_div(cols, kern.nr), g.c) * kern.nr;
    most = std::max(most, cell_rows * cell_cols);
  }
  return most;
}

// Releases a pair kernel's units when the thread's calls end, however they end.
struct Leave {
  void (*leave)();
  ~Leave() {
    if (leave != nullptr) leave();
  }
};

void run_thread(const Job& job, int t, int threads) {
  const Leave leave{job.kern.leave};
  const GemmShape& s = job.s;
  const int mr = job.kern.mr, nr = job.kern.nr;
  const Blocking& bl = job.bl;
  ThreadScratch& ws = thread_scratch();
  // Everything this thread needs, allocated before the first barrier: a failure here is
  // agreed on by all threads (nobody waits at a barrier for a thread that has left).
  const bool pairs = job.kern.pair_fn != nullptr;
  float *abuf = nullptr, *bbuf = nullptr, *cbuf = nullptr, *panel = nullptr;
  try {
    abuf = ws.a.as<float>(static_cast<std::size_t>(bl.mc * bl.kc));
    bbuf = ws.b.as<float>(static_cast<std::size_t>(bl.kc * bl.nc));
    cbuf = ws.c.as<float>(
        static_cast<std::size_t>(c_block_floats(s, job.kern, bl, threads, job.one_depth)));
    // bf16 pairs: each panel is packed as float32 here first, then paired.
    if (pairs) panel = ws.panel.as<float>(static_cast<std::size_t>(bl.kc * std::max(mr, nr)));
  } catch (const std::bad_alloc&) {
    job.failed->store(true);
  }
  barrier(threads);
  if (job.failed->load()) return;

  const std::int64_t depth = depth_of(s, job.kern, bl);
  const std::int64_t depth_blocks = ceil_div(s.k, depth);
  const bool one_depth = job.one_depth;
  const std::int64_t mb = chunk_rows(s, bl, one_depth);
  for (std::int64_t i0 = 0; i0 < s.m; i0 += mb) {
    const std::int64_t rows = std::min(mb, s.m - i0);
    const Grid g = grid_for(threads, rows, std::min(bl.nc, s.n), mr, nr);
    if (t >= g.r * g.c) continue;  // idle in this chunk
    const auto [p0, p1] =
        share(ceil_div(rows, mr), static_cast<int>(t / g.c), static_cast<int>(g.r));
    const std::int64_t r0 = p0 * mr, r1 = std::min(p1 * mr, rows);
    for (std::int64_t j0 = 0; j0 < s.n; j0 += bl.nc) {
      const std::int64_t cols = std::min(bl.nc, s.n - j0);
      // The B panels this thread packs and multiplies by.
      const auto [q0, q1] =
          share(ceil_div(cols, nr), static_cast<int>(t % g.c), static_cast<int>(g.c));
      const std::int64_t ldc = std::max<std::int64_t>(q1 - q0, 1) * nr;
      const bool busy = r0 < r1 && q0 < q1;
      if (!busy) continue;
      for (int p = 0; p < job.passes.count; ++p) {
        // Where this pass reads its parts of A and B (a bfloat16 copy of a part, or the
        // operand itself with the part applied while packing).
        const PartSource a_src = job.a_parts.source(job.passes.pass[p].a);
        const PartSource b_src = job.b_parts.source(job.passes.pass[p].b);
        for (std::int64_t d = 0; d < depth_blocks; ++d) {
          const std::int64_t k0 = d * depth, kc = std::min(depth, s.k - k0);
          const bool first = p == 0 && d == 0;
          const bool last = p + 1 == job.passes.count && d + 1 == depth_blocks;
          // Depth pairs of the pair kernels, padded to their block.
          const std::int64_t kp = ceil_div((kc + 1) / 2, job.kern.pair_block) * job.kern.pair_block;
          if (pairs &&
              pair_panels_bf16_across(b_src.x, false, j0 + q0 * nr,
                                      std::min(q1 * nr, cols) - q0 * nr, k0, kc, b_src.part, nr, kp,
                                      reinterpret_cast<std::uint32_t*>(bbuf) + q0 * kp * nr)) {
            // the thread's B panels in one pass along the depth rows
          } else if (pairs) {
            auto* words = reinterpret_cast<std::uint32_t*>(bbuf);
            for (std::int64_t q = q0; q < q1; ++q) {
              const std::int64_t c0 = j0 + q * nr, width = std::min(nr * (q + 1), cols) - q * nr;
              if (pair_panel_bf16(b_src.x, false, c0, width, k0, kc, b_src.part, nr, kp, false,
                                  words + q * kp * nr)) {
                continue;  // pair panels straight from bf16 storage
              }
              pack_b(b_src.x, k0, kc, c0, width, b_src.part, nr, panel);
              pair_panel_padded(panel, kc, nr, kp, false, words + q * kp * nr);
            }
          } else {
            pack_b(b_src.x, k0, kc, j0 + q0 * nr, std::min(q1 * nr, cols) - q0 * nr, b_src.part, nr,
                   bbuf + q0 * kc * nr);
          }
          for (std::int64_t ib = r0; ib < r1; ib += bl.mc) {
            const std::int64_t mc = std::min(bl.mc, r1 - ib);
            float* cblock = cbuf + (one_depth ? 0 : (ib - r0) * ldc);
            if (pairs) {
              auto* awords = reinterpret_cast<std::uint32_t*>(abuf);
              // The A panels by pair (not AMX's rows) in one pass along the depth rows where
              // it can, else panel by panel.
              const bool across =
                  !job.kern.a_rows && pair_panels_bf16_across(a_src.x, true, i0 + ib, mc, k0, kc,
                                                              a_src.part, mr, kp, awords);
              for (std::int64_t ir = 0; !across && ir * mr < mc; ++ir) {
                const std::int64_t r0 = i0 + ib + ir * mr;
                const std::int64_t height = std::min<std::int64_t>(mr, mc - ir * mr);
                if (pair_panel_bf16(a_src.x, true, r0, height, k0, kc, a_src.part, mr, kp,
                                    job.kern.a_rows, awords + ir * kp * mr)) {
                  continue;
                }
                pack_a(a_src.x, r0, height, k0, kc, a_src.part, mr, panel);
                pair_panel_padded(panel, kc, mr, kp, job.kern.a_rows, awords + ir * kp * mr);
              }
              if (job.kern.enter != nullptr) job.kern.enter();
              const auto* bwords = reinterpret_cast<const std::uint32_t*>(bbuf);
              for (std::int64_t q = q0; q < q1; ++q) {
                for (std::int64_t ir = 0; ir * mr < mc; ++ir) {
                  job.kern.pair_fn(kp, awords + ir * kp * mr, bwords + q * kp * nr,
                                   cblock + ir * mr * ldc + (q - q0) * nr, ldc, !first);
                }
              }
            } else {
              pack_a(a_src.x, i0 + ib, mc, k0, kc, a_src.part, mr, abuf);
              for (std::int64_t q = q0; q < q1; ++q) {
                const float* bpanel = bbuf + q * kc * nr;
                for (std::int64_t ir = 0; ir * mr < mc; ++ir) {
                  job.kern.fn(kc, abuf + ir * kc * mr, bpanel,
                              cblock + ir * mr * ldc + (q - q0) * nr, ldc, !first);
                }
              }
            }
            if (last) {
              // (q0 and q1 by value: clang before 16 captures no structured binding.)
              job.epilogue_error->run([&, q0 = q0, q1 = q1] {
                (*job.epilogue)(GemmTile{cblock, ldc, i0 + ib, mc, j0 + q0 * nr,
                                         std::min(q1 * nr, cols) - q0 * nr});
              });
            }
          }
        }
      }
    }
  }
}

MicroKernelInfo kernel_for(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::avx512:
      return micro_kernel_avx512();
    case GemmIsa::avx2:
      return micro_kernel_avx2();
    case GemmIsa::scalar:
      break;
  }
  return micro_kernel_scalar();
}

// An all-zero product (k == 0), handed out in blocks of rows.
void zero_product(const GemmShape& s, const GemmEpilogue& epilogue) {
  constexpr std::int64_t kRows = 64;
  float* zeros = thread_scratch().c.as<float>(static_cast<std::size_t>(kRows * s.n));
  std::fill(zeros, zeros + kRows * s.n, 0.0f);
  for (std::int64_t i = 0; i < s.m; i += kRows) {
    epilogue(GemmTile{zeros, s.n, i, std::min(kRows, s.m - i), 0, s.n});
  }
}

}  // namespace

MicroKernelInfo active_micro_kernel() {
  return kernel_for(active_gemm_isa());
}

void blocked_gemm(const GemmShape& s, const Operand& a, const Operand& b, const PassList& passes,
                  const GemmEpilogue& epilogue, bool all_threads, DotUnit unit) {
  if (s.m <= 0 || s.n <= 0) return;
  if (s.k <= 0) {
    zero_product(s, epilogue);
    return;
  }
  const MicroKernelInfo kern = unit == DotUnit::bf16_pairs  ? micro_kernel_avx512_bf16()
                               : unit == DotUnit::amx_tiles ? micro_kernel_amx()
                                                            : active_micro_kernel();
  const Blocking bl = blocking_for(kern);
  std::atomic<bool> failed{false};
  FirstError epilogue_error;
  const bool one_depth = s.k <= depth_of(s, kern, bl) && passes.count == 1;
  const bool parallel = all_threads && !omp_in_parallel() && omp_get_max_threads() > 1 &&
                        s.flops() >= 2.0 * 64 * 64 * 64;
  // A pair kernel reads bfloat16 pair words: an operand stored otherwise gets a bfloat16 copy
  // of each part its passes read, made once here (PartCopies).
  std::array<bool, 3> a_used{}, b_used{};
  if (kern.pair_fn != nullptr) {
    for (int p = 0; p < passes.count; ++p) {
      a_used[static_cast<std::size_t>(passes.pass[p].a)] = true;
      b_used[static_cast<std::size_t>(passes.pass[p].b)] = true;
    }
  }
  OperandRooms& rooms = operand_rooms();
  const Job job{s,
                PartCopies({a, s.trans_a, s.lda}, s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k,
                           a_used, rooms.a, parallel),
                PartCopies({b, s.trans_b, s.ldb}, s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n,
                           b_used, rooms.b, parallel),
                passes,
                &epilogue,
                kern,
                bl,
                one_depth,
                &failed,
                &epilogue_error};
  if (parallel) {
#pragma omp parallel
    run_thread(job, omp_get_thread_num(), omp_get_num_threads());
  } else {
    run_thread(job, 0, 1);
  }
  if (failed.load()) throw std::bad_alloc();
  epilogue_error.rethrow();
}

void release_operand_copies() {
  OperandRooms& rooms = operand_rooms();
  for (ScratchBuffer& r : rooms.a) r.release();
  for (ScratchBuffer& r : rooms.b) r.release();
}

std::size_t operand_copies_bytes() {
  std::size_t bytes = 0;
  for (const ScratchBuffer& r : operand_rooms().a) bytes += r.capacity();
  for (const ScratchBuffer& r : operand_rooms().b) bytes += r.capacity();
  return bytes;
}

}  // namespace mantissa::kernels::gemm_detail
