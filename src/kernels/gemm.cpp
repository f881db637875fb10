#include "mantissa/kernels/gemm.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels {
namespace {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, std::int64_t,
                       std::int64_t, std::int64_t, bool>;

dnnl::memory::desc matrix_desc(std::int64_t rows, std::int64_t cols, bool transposed,
                               std::int64_t ld, dnnl::memory::data_type dt) {
  // Logical rows x cols; stored row-major with leading dimension ld, or transposed.
  const dnnl::memory::dims strides =
      transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc({rows, cols}, dt, strides);
}

struct CachedMatmul {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c;
};

CachedMatmul& cached_f32_matmul(const GemmShape& s, bool accumulate) {
  static std::mutex mu;
  static std::map<Key, CachedMatmul> cache;
  const Key key{s.m, s.n, s.k, s.trans_a, s.trans_b, s.lda, s.ldb, s.ldc, accumulate};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  const auto a = matrix_desc(s.m, s.k, s.trans_a, s.lda, dt::f32);
  const auto b = matrix_desc(s.k, s.n, s.trans_b, s.ldb, dt::f32);
  const auto c = matrix_desc(s.m, s.n, false, s.ldc, dt::f32);
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
  return cache.emplace(key, CachedMatmul{dnnl::matmul(pd), a, b, c}).first->second;
}

// Thread-local scratch that only grows: no allocation once warm.
std::vector<float>& scratch(int which) {
  thread_local std::vector<float> buffers[6];
  return buffers[which];
}

float at(const float* x, bool trans, std::int64_t ld, std::int64_t r, std::int64_t c) {
  return trans ? x[c * ld + r] : x[r * ld + c];
}

// op(X) (rows x cols) as a dense row-major copy.
void dense_copy(const float* x, bool trans, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(r * cols + c)] = at(x, trans, ld, r, c);
  }
}

// hi = bf16(x), lo = bf16(x - hi), with the vectorized bulk rounding. x - hi is exact, and
// for float16 / cbfloat16 values lo keeps at most 3 significant bits, so it is exact too.
void hi_lo(const std::vector<float>& x, std::vector<float>& hi, std::vector<float>& lo,
           bool need_lo) {
  hi = x;
  numerics::round_to_format(hi.data(), hi.size(), Format::bfloat16);
  if (!need_lo) return;
  lo.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) lo[i] = x[i] - hi[i];
  numerics::round_to_format(lo.data(), lo.size(), Format::bfloat16);
}

// Builds A' (m x passes*k) and B' (passes*k x n), dense row-major, from the hi/lo split.
// Pass p multiplies (A part, B part): 0 (hi,hi), 1 (hi,lo), 2 (lo,hi), 3 (lo,lo).
void split_operands(const GemmShape& s, const float* a, const float* b, int passes,
                    std::vector<float>& a2, std::vector<float>& b2) {
  std::vector<float>& dense = scratch(2);
  std::vector<float>& hi = scratch(3);
  std::vector<float>& lo = scratch(4);
  const std::int64_t k2 = passes * s.k;
  const bool a_lo[4] = {false, false, true, true};
  const bool b_lo[4] = {false, true, false, true};
  const auto bytes = [](std::int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); };

  dense_copy(a, s.trans_a, s.lda, s.m, s.k, dense);
  hi_lo(dense, hi, lo, passes > 1);
  a2.resize(static_cast<std::size_t>(s.m * k2));
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (int p = 0; p < passes; ++p) {
      const std::vector<float>& part = a_lo[p] ? lo : hi;
      std::memcpy(a2.data() + i * k2 + p * s.k, part.data() + i * s.k, bytes(s.k));
    }
  }
  dense_copy(b, s.trans_b, s.ldb, s.k, s.n, dense);
  hi_lo(dense, hi, lo, passes > 1);
  b2.resize(static_cast<std::size_t>(k2 * s.n));
  for (int p = 0; p < passes; ++p) {
    const std::vector<float>& part = b_lo[p] ? lo : hi;
    std::memcpy(b2.data() + p * s.k * s.n, part.data(), bytes(s.k * s.n));
  }
}

bool splits(Format f) {
  return f == Format::float16 || f == Format::cbfloat16;
}

}  // namespace

GemmShape GemmShape::dense(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a,
                           bool trans_b) {
  return GemmShape{m, n, k, trans_a, trans_b, trans_a ? m : k, trans_b ? k : n, n};
}

void gemm_f32(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    if (!accumulate) {
      for (std::int64_t i = 0; i < s.m; ++i) {
        for (std::int64_t j = 0; j < s.n; ++j) c[i * s.ldc + j] = 0.0f;
      }
    }
    return;
  }
  CachedMatmul& mm = cached_f32_matmul(s, accumulate);
  dnnl::stream stream(engine());
  dnnl::memory am(mm.a, engine(), const_cast<float*>(a));
  dnnl::memory bm(mm.b, engine(), const_cast<float*>(b));
  dnnl::memory cm(mm.c, engine(), c);
  mm.primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

void gemm_f32_in_thread(const GemmShape& s, const float* a, const float* b, float* c,
                        bool accumulate) {
  if (s.m == 0 || s.n == 0) return;
  const dnnl_status_t st = dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k,
                                      1.0f, a, s.lda, b, s.ldb, accumulate ? 1.0f : 0.0f, c, s.ldc);
  if (st != dnnl_success) {
    throw Error("gemm_f32_in_thread: dnnl_sgemm failed (status " + std::to_string(st) + ")");
  }
}

void gemm_ref(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate) {
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      double acc = accumulate ? c[i * s.ldc + j] : 0.0;
      for (std::int64_t p = 0; p < s.k; ++p) {
        acc += static_cast<double>(at(a, s.trans_a, s.lda, i, p)) *
               static_cast<double>(at(b, s.trans_b, s.ldb, p, j));
      }
      c[i * s.ldc + j] = static_cast<float>(acc);
    }
  }
}

void gemm(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate,
          const GemmPrecision& p) {
  if (p.passes != 1 && p.passes != 3 && p.passes != 4) {
    throw Error("gemm: passes must be 1, 3 or 4 (got " + std::to_string(p.passes) + ")");
  }
  const bool split = splits(p.format);
  const bool direct = p.format == Format::float32 || !split ||
                      (p.algorithm == GemmAlgorithm::automatic && p.passes > 1);
  if (direct) {
    gemm_f32(s, a, b, c, accumulate);
    return;
  }
  std::vector<float>& a2 = scratch(0);
  std::vector<float>& b2 = scratch(1);
  split_operands(s, a, b, p.passes, a2, b2);
  const GemmShape s2 = GemmShape::dense(s.m, s.n, p.passes * s.k);
  GemmShape s3 = s2;
  s3.ldc = s.ldc;
  gemm_f32(s3, a2.data(), b2.data(), c, accumulate);
}

bool native_bf16_gemm_available() {
  static const bool available = [] {
    try {
      using dt = dnnl::memory::data_type;
      const auto a = dnnl::memory::desc({64, 64}, dt::bf16, dnnl::memory::format_tag::ab);
      const auto c = dnnl::memory::desc({64, 64}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, c), engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

}  // namespace mantissa::kernels
