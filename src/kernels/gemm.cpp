#include "mantissa/kernels/gemm.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

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
  thread_local std::vector<float> buffers[2];
  return buffers[which];
}

float at(const float* x, bool trans, std::int64_t ld, std::int64_t r, std::int64_t c) {
  return trans ? x[c * ld + r] : x[r * ld + c];
}

// Builds A' (m x passes*k) and B' (passes*k x n), dense row-major, from the hi/lo split.
void split_operands(const GemmShape& s, const float* a, const float* b, int passes,
                    std::vector<float>& a2, std::vector<float>& b2) {
  const std::int64_t k2 = passes * s.k;
  a2.resize(static_cast<std::size_t>(s.m * k2));
  b2.resize(static_cast<std::size_t>(k2 * s.n));
  const numerics::Layout bf16 = numerics::layout(Format::bfloat16);
  auto to_bf16 = [&bf16](float x) {
    return numerics::decode(numerics::encode(x, bf16, numerics::Rounding::nearest_even,
                                             numerics::Overflow::to_infinity),
                            bf16);
  };
  auto hi_lo = [&to_bf16](float x, float& hi, float& lo) {
    hi = to_bf16(x);
    lo = to_bf16(x - hi);  // x - hi is exact; lo holds at most 3 significant bits
  };
  // Pass p uses (A part, B part): 0 (hi,hi), 1 (hi,lo), 2 (lo,hi), 3 (lo,lo).
  const bool a_lo[4] = {false, false, true, true};
  const bool b_lo[4] = {false, true, false, true};
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.k; ++j) {
      float hi = 0, lo = 0;
      hi_lo(at(a, s.trans_a, s.lda, i, j), hi, lo);
      for (int p = 0; p < passes; ++p) {
        a2[static_cast<std::size_t>(i * k2 + p * s.k + j)] = passes == 1 ? hi : (a_lo[p] ? lo : hi);
      }
    }
  }
  for (std::int64_t j = 0; j < s.k; ++j) {
    for (std::int64_t c = 0; c < s.n; ++c) {
      float hi = 0, lo = 0;
      hi_lo(at(b, s.trans_b, s.ldb, j, c), hi, lo);
      for (int p = 0; p < passes; ++p) {
        b2[static_cast<std::size_t>((p * s.k + j) * s.n + c)] =
            passes == 1 ? hi : (b_lo[p] ? lo : hi);
      }
    }
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
