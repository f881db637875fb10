#pragma once
// Matrix products on float32 buffers through oneDNN, with the mixed-precision semantics of
// DESIGN.md section 3: inputs hold values of a format H, products are accumulated in fp32.
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

using numerics::Format;

// C[m,n] (+)= op(A)[m,k] * op(B)[k,n], all row-major with leading dimensions lda, ldb, ldc.
// op(A) = A (m x k) or, with trans_a, A^T where A is stored k x m; likewise B.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;

  // Leading dimensions of densely stored operands.
  static GemmShape dense(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a = false,
                         bool trans_b = false);
  double flops() const { return 2.0 * static_cast<double>(m) * n * k; }
};

enum class GemmAlgorithm {
  // Fastest exact-enough route for this CPU. Without native bf16 matrix units (no AVX512-BF16
  // or AMX; oneDNN then has no bf16 matmul) one fp32 GEMM on the H values is exact in its
  // products for every H here, so POL 0 and 1 run as that single pass; POL 2 rounds
  // float16/cbfloat16 inputs to bfloat16 first, as specified.
  automatic,
  // The exact bf16 decomposition, pass for pass: x = hi + lo with hi = bf16(x),
  // lo = bf16(x - hi); one GEMM over the concatenated inner dimension (4K at POL 0, 3K at
  // POL 1 dropping lo*lo, K at POL 2). The numerics of a bf16 matrix unit, on any CPU.
  decomposed,
};

struct GemmPrecision {
  Format format = Format::float32;  // the format whose values A and B hold
  int passes = 1;                   // 4, 3 or 1 (precision::matmul_passes)
  GemmAlgorithm algorithm = GemmAlgorithm::automatic;
};

// A and B must already hold values of precision.format (the caller rounds them once).
void gemm(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate,
          const GemmPrecision& precision = {});

// Plain oneDNN fp32 GEMM (primitives created once per shape and cached).
void gemm_f32(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate);

// The same product through dnnl_sgemm, for calls from inside an OpenMP parallel region (it
// then runs on the calling thread; primitives are not re-entered across threads).
void gemm_f32_in_thread(const GemmShape& s, const float* a, const float* b, float* c,
                        bool accumulate);

// The naive twin: triple loop accumulated in double, rounded to float once per element.
void gemm_ref(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate);

// True when oneDNN offers a bf16 matmul on this CPU (AVX512-BF16 or AMX).
bool native_bf16_gemm_available();

}  // namespace mantissa::kernels
