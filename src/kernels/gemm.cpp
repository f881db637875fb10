#include "mantissa/kernels/gemm.hpp"

#include <cmath>
#include <string>

#include "gemm/blocked_gemm.hpp"
#include "gemm/onednn_routes.hpp"
#include "gemm/packing.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels {
namespace {

void check(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0) {
    throw Error("gemm: negative size (m " + std::to_string(s.m) + ", n " + std::to_string(s.n) +
                ", k " + std::to_string(s.k) + ")");
  }
}

void run(const GemmShape& s, const Operand& a, const Operand& b, const GemmEpilogue& epilogue,
         const GemmPrecision& p, bool all_threads) {
  check(s);
  const bool native = resolve_route(p.format, p.route) == GemmRoute::native_bf16;
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, native);
  if (native) {
    gemm_detail::onednn_bf16_gemm(s, a, b, passes, epilogue, all_threads);
  } else {
    gemm_detail::blocked_gemm(s, a, b, passes, epilogue, all_threads);
  }
}

// Writes (or adds) finished blocks into a float32 matrix.
GemmEpilogue into_matrix(float* c, std::int64_t ldc, bool accumulate) {
  return [=](const GemmTile& t) {
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const float* v = t.values + r * t.ld;
      float* out = c + (t.row0 + r) * ldc + t.col0;
      if (accumulate) {
        for (std::int64_t j = 0; j < t.cols; ++j) out[j] += v[j];
      } else {
        for (std::int64_t j = 0; j < t.cols; ++j) out[j] = v[j];
      }
    }
  };
}

float element(const Operand& x, bool trans, std::int64_t ld, std::int64_t r, std::int64_t c) {
  const std::int64_t index = trans ? c * ld + r : r * ld + c;
  const int bytes = numerics::traits(x.format).storage_bytes;
  float v = 0;
  numerics::decode_array_ref(static_cast<const char*>(x.data) + index * bytes, 1, x.format, &v);
  return v;
}

}  // namespace

GemmShape GemmShape::dense(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a,
                           bool trans_b) {
  return GemmShape{m, n, k, trans_a, trans_b, trans_a ? m : k, trans_b ? k : n, n};
}

void gemm(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
          const GemmPrecision& p) {
  run(s, a, b, into_matrix(c, s.ldc, accumulate), p, true);
}

void gemm(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
          const GemmPrecision& p) {
  run(s, a, b, epilogue, p, true);
}

void gemm_in_thread(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                    const GemmPrecision& p) {
  run(s, a, b, into_matrix(c, s.ldc, accumulate), p, false);
}

void gemm_in_thread(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
                    const GemmPrecision& p) {
  run(s, a, b, epilogue, p, false);
}

void gemm_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
              const GemmPrecision& p) {
  check(s);
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, false);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int q = 0; q < passes.count; ++q) {
        const gemm_detail::Pass& pass = passes.pass[q];
        for (std::int64_t k = 0; k < s.k; ++k) {
          const float x = gemm_detail::part_value(element(a, s.trans_a, s.lda, i, k), pass.a);
          const float y = gemm_detail::part_value(element(b, s.trans_b, s.ldb, k, j), pass.b);
          acc = std::fma(x, y, acc);
        }
      }
      float& out = c[i * s.ldc + j];
      out = accumulate ? out + acc : acc;
    }
  }
}

}  // namespace mantissa::kernels
