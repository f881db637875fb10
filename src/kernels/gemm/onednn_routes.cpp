#include "onednn_routes.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "../onednn_engine.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/scratch.hpp"
#include "mantissa/numerics/convert.hpp"
#include "packing.hpp"

namespace mantissa::kernels {
namespace {

using dt = dnnl::memory::data_type;

dnnl::memory::desc matrix_desc(std::int64_t rows, std::int64_t cols, bool transposed,
                               std::int64_t ld, dt type) {
  // Logical rows x cols; stored row-major with leading dimension ld, or transposed.
  const dnnl::memory::dims strides =
      transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc({rows, cols}, type, strides);
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, std::int64_t,
                       std::int64_t, std::int64_t, bool, int>;

struct CachedMatmul {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c;
};

CachedMatmul make_matmul(const GemmShape& s, bool accumulate, dt in_type) {
  const auto a = matrix_desc(s.m, s.k, s.trans_a, s.lda, in_type);
  const auto b = matrix_desc(s.k, s.n, s.trans_b, s.ldb, in_type);
  const auto c = matrix_desc(s.m, s.n, false, s.ldc, dt::f32);
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, onednn_engine());
    return CachedMatmul{dnnl::matmul(pd), a, b, c};
  } catch (const dnnl::error& e) {
    throw Error(std::string("gemm: oneDNN could not create a matmul (") + e.what() + ")");
  }
}

// Primitives are created once per shape. Calls from inside a parallel region use the calling
// thread's own cache (a primitive is not executed by two threads at once).
CachedMatmul& cached_matmul(const GemmShape& s, bool accumulate, dt in_type, bool in_thread) {
  const Key key{s.m,   s.n,   s.k,   s.trans_a,  s.trans_b,
                s.lda, s.ldb, s.ldc, accumulate, static_cast<int>(in_type)};
  if (in_thread) {
    thread_local std::map<Key, CachedMatmul> local;
    auto it = local.find(key);
    if (it == local.end()) it = local.emplace(key, make_matmul(s, accumulate, in_type)).first;
    return it->second;
  }
  static std::mutex mu;
  static std::map<Key, CachedMatmul> shared;
  std::lock_guard<std::mutex> lock(mu);
  auto it = shared.find(key);
  if (it == shared.end()) it = shared.emplace(key, make_matmul(s, accumulate, in_type)).first;
  return it->second;
}

void execute(CachedMatmul& mm, const void* a, const void* b, float* c) {
  dnnl::stream stream(onednn_engine());
  dnnl::memory am(mm.a, onednn_engine(), const_cast<void*>(a));
  dnnl::memory bm(mm.b, onednn_engine(), const_cast<void*>(b));
  dnnl::memory cm(mm.c, onednn_engine(), c);
  mm.primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

struct Scratch {
  ScratchBuffer a, b, c;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}
// Each thread's decode buffer for encoding its share of an operand.
ScratchBuffer& thread_run() {
  thread_local ScratchBuffer run;
  return run;
}

// Whether oneDNN can read x as stored: bf16 storage for a bf16 product (whole or hi: a bf16
// value is its own hi), float32 storage read whole for a float32 one.
bool direct(const Operand& x, const gemm_detail::PassList& passes, bool a_side, bool bf16) {
  if (passes.count != 1) return false;
  const gemm_detail::Part part = a_side ? passes.pass[0].a : passes.pass[0].b;
  if (bf16) return x.format == Format::bfloat16 && part != gemm_detail::Part::lo;
  return x.format == Format::float32 && part == gemm_detail::Part::whole;
}

// Where the runs of a stored operand go in the product's operand of passes.count * k depths: run
// i of pass p at out + i * step + p * pass_step. A run along the inner dimension (rows of A,
// columns of op(B) stored transposed) keeps its passes side by side (step passes * length,
// pass_step length); a run across it (A stored transposed, B as stored) has them stacked,
// each pass a block of all the runs (step length, pass_step runs * length).
struct RunLayout {
  std::int64_t runs, length, ld, step, pass_step;
};
RunLayout run_layout(std::int64_t runs, std::int64_t length, std::int64_t ld, bool along,
                     int passes) {
  return along ? RunLayout{runs, length, ld, passes * length, length}
               : RunLayout{runs, length, ld, length, runs * length};
}

// x's runs (r.runs of r.length stored elements, run i at index i * r.ld) into out, every pass
// of the side's parts, on all threads unless in_thread. As bf16 bits: one pass of stored
// values or of their bf16 rounding is one bulk conversion (numerics' bfloat16 encoding is that
// rounding); split passes decode the run once and write each part. As float32: each pass
// decoded and its part taken in place.
template <class T>
void copy_runs(const Operand& x, const gemm_detail::PassList& passes, bool a_side,
               const RunLayout& r, T* out, bool in_thread) {
  const auto* base = static_cast<const char*>(x.data);
  const std::int64_t bytes = numerics::traits(x.format).storage_bytes;
  const auto n = static_cast<std::size_t>(r.length);
  const auto part = [&](int p) { return a_side ? passes.pass[p].a : passes.pass[p].b; };
  const bool converts = passes.count == 1 && part(0) != gemm_detail::Part::lo;
  const auto copy = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      const void* run = base + i * r.ld * bytes;
      T* to = out + i * r.step;
      if constexpr (std::is_same_v<T, std::uint16_t>) {
        if (converts) {
          numerics::convert_array(run, x.format, n, to, Format::bfloat16);
          continue;
        }
        float* v = thread_run().as<float>(n);
        numerics::convert_array(run, x.format, n, v, Format::float32);
        for (int p = 0; p < passes.count; ++p) {
          gemm_detail::part_bits(v, r.length, part(p), to + p * r.pass_step);
        }
      } else {
        for (int p = 0; p < passes.count; ++p) {
          numerics::convert_array(run, x.format, n, to + p * r.pass_step, Format::float32);
          gemm_detail::apply_part(to + p * r.pass_step, r.length, part(p));
        }
      }
    }
  };
  if (in_thread) {
    copy(0, r.runs);
  } else {
    const std::int64_t min_runs = kParallelMinElements / std::max<std::int64_t>(1, r.length);
    parallel_pieces(r.runs, copy, std::max<std::int64_t>(1, min_runs), 1);
  }
}

template <class T>
void onednn_gemm(const GemmShape& s, const Operand& a, const Operand& b,
                 const gemm_detail::PassList& passes, const GemmEpilogue& epilogue,
                 bool all_threads) {
  constexpr bool kBf16 = std::is_same_v<T, std::uint16_t>;
  constexpr dt kType = kBf16 ? dt::bf16 : dt::f32;
  if (s.m <= 0 || s.n <= 0) return;
  Scratch& sc = scratch();
  const bool in_thread = !all_threads || omp_in_parallel();
  const std::int64_t k2 = passes.count * s.k;
  // Runs fn(r0, r1) over [0, rows), on all threads unless in_thread.
  const auto over_rows = [&](std::int64_t rows, const auto& fn) {
    if (in_thread) {
      fn(std::int64_t{0}, rows);
    } else {
      parallel_chunks(rows, fn, 1);
    }
  };
  // B: in place when oneDNN can read it as stored, else copied once, every pass ([k2, n]).
  const void* bp = b.data;
  GemmShape g = s;
  if (!direct(b, passes, false, kBf16)) {
    auto* out = sc.b.as<T>(static_cast<std::size_t>(k2 * s.n));
    // Stored transposed: n runs of k along the depths; else k runs of n across them.
    copy_runs(b, passes, false,
              s.trans_b ? run_layout(s.n, s.k, s.ldb, true, passes.count)
                        : run_layout(s.k, s.n, s.ldb, false, passes.count),
              out, in_thread);
    bp = out;
    g.ldb = s.trans_b ? k2 : s.n;
  }
  g.k = k2;
  g.ldc = s.n;
  // A and C a block of rows at a time (onednn_block_rows).
  const int a_bytes = numerics::traits(a.format).storage_bytes;
  const bool a_direct = direct(a, passes, true, kBf16);
  const std::int64_t block_rows = gemm_detail::onednn_block_rows(
      s.m, (a_direct ? 0 : k2 * static_cast<std::int64_t>(sizeof(T))) + s.n * 4);
  for (std::int64_t i0 = 0; i0 < s.m; i0 += block_rows) {
    const std::int64_t rows = std::min(block_rows, s.m - i0);
    GemmShape gb = g;
    gb.m = rows;
    const void* first_row =
        static_cast<const char*>(a.data) + (s.trans_a ? i0 : i0 * s.lda) * a_bytes;
    const void* ap = first_row;
    if (!a_direct) {
      // The block's rows: `rows` runs of k along the depths; stored transposed, k runs of
      // `rows` across them.
      const Operand block{first_row, a.format};
      auto* out = sc.a.as<T>(static_cast<std::size_t>(rows * k2));
      copy_runs(block, passes, true,
                s.trans_a ? run_layout(s.k, rows, s.lda, false, passes.count)
                          : run_layout(rows, s.k, s.lda, true, passes.count),
                out, in_thread);
      ap = out;
      gb.lda = s.trans_a ? rows : k2;
    }
    float* c = sc.c.as<float>(static_cast<std::size_t>(rows * s.n));
    if (k2 == 0) {
      std::fill(c, c + rows * s.n, 0.0f);
    } else {
      execute(cached_matmul(gb, false, kType, in_thread), ap, bp, c);
    }
    // The epilogue in tiles of rows, each thread's share of the block's rows (a share is a
    // multiple of 16 rows: counted in tiles, a 512-row block would fall to one thread).
    constexpr std::int64_t kTileRows = 32;
    over_rows(rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; r += kTileRows) {
        epilogue(GemmTile{c + r * s.n, s.n, i0 + r, std::min(kTileRows, r1 - r), 0, s.n});
      }
    });
  }
}

}  // namespace

namespace gemm_detail {

std::int64_t onednn_block_rows(std::int64_t m, std::int64_t row_bytes) {
  constexpr std::int64_t kScratchBudget = std::int64_t{16} << 20, kMinRows = 512;
  const std::int64_t fit = kScratchBudget / std::max<std::int64_t>(row_bytes, 1);
  return std::clamp(fit, kMinRows, std::max(m, kMinRows));
}

void onednn_bf16_gemm(const GemmShape& s, const Operand& a, const Operand& b,
                      const PassList& passes, const GemmEpilogue& epilogue, bool all_threads) {
  onednn_gemm<std::uint16_t>(s, a, b, passes, epilogue, all_threads);
}

void onednn_f32_gemm(const GemmShape& s, const Operand& a, const Operand& b, const PassList& passes,
                     const GemmEpilogue& epilogue, bool all_threads) {
  onednn_gemm<float>(s, a, b, passes, epilogue, all_threads);
}

void release_onednn_copies() {
  Scratch& sc = scratch();
  sc.a.release();
  sc.b.release();
  sc.c.release();
  thread_run().release();
}

std::size_t onednn_copies_bytes() {
  const Scratch& sc = scratch();
  return sc.a.capacity() + sc.b.capacity() + sc.c.capacity() + thread_run().capacity();
}

void onednn_sgemm_in_thread(const GemmShape& s, const float* a, const float* b, float* c,
                            bool accumulate) {
  if (s.m <= 0 || s.n <= 0) return;
  if (s.k <= 0) {  // an empty sum (oneDNN refuses a zero depth): C = 0, or C unchanged
    if (!accumulate) {
      for (std::int64_t i = 0; i < s.m; ++i) std::fill(c + i * s.ldc, c + i * s.ldc + s.n, 0.0f);
    }
    return;
  }
  const dnnl_status_t st = dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k,
                                      1.0f, a, s.lda, b, s.ldb, accumulate ? 1.0f : 0.0f, c, s.ldc);
  if (st != dnnl_success) {
    throw Error("gemm: dnnl_sgemm failed (status " + std::to_string(st) + ")");
  }
}

NativeBf16 probe_native_bf16() {
  NativeBf16 info;
  try {
    const auto a = dnnl::memory::desc({64, 64}, dt::bf16, dnnl::memory::format_tag::ab);
    const auto c = dnnl::memory::desc({64, 64}, dt::f32, dnnl::memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, c), onednn_engine());
    info.available = true;
    info.isa = pd.impl_info_str();
    info.matrix_units = info.isa.find("amx") != std::string::npos;
  } catch (const dnnl::error&) {
    info.available = false;
  }
  return info;
}

}  // namespace gemm_detail

void gemm_onednn_f32(const GemmShape& s, const float* a, const float* b, float* c,
                     bool accumulate) {
  if (s.m <= 0 || s.n <= 0) return;
  if (s.k <= 0) {
    for (std::int64_t i = 0; i < s.m; ++i) {
      if (!accumulate) std::fill(c + i * s.ldc, c + i * s.ldc + s.n, 0.0f);
    }
    return;
  }
  execute(cached_matmul(s, accumulate, dt::f32, omp_in_parallel()), a, b, c);
}

}  // namespace mantissa::kernels
