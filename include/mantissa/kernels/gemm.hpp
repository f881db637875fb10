#pragma once
// Matrix products with the mixed-precision semantics of docs/design.md section 3: operands hold
// values of a format H (stored packed in H's own width, or as float32), products are
// accumulated in float32. Two routes, chosen per call from the precision's route preference
// and what this CPU has (gemm_route.hpp):
//   - fp32 FMA: mantissa's own blocked GEMM (AVX-512 or AVX2 micro-kernels, a scalar twin).
//     Operands are decoded from their storage format inside the packing step, into
//     per-thread cache-sized panels; each element of C is one fused multiply-add chain over
//     k in order, so the result does not depend on the ISA, the blocking or the thread count.
//   - native bf16: oneDNN's bf16 matmul (AMX or AVX512-BF16 as oneDNN finds them), with
//     float16 / cbfloat16 / float32 operands split exactly into bf16 hi + lo passes.
#include <cstdint>
#include <functional>

#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/policy.hpp"

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

// One operand's elements: `format` says how they are stored (float32, or packed 16/8-bit
// patterns), the shape's lda/ldb and trans flags say where.
struct Operand {
  const void* data = nullptr;
  Format format = Format::float32;
  Operand() = default;
  Operand(const float* p) : data(p) {}  // NOLINT: float32 buffers convert implicitly
  Operand(const void* p, Format f) : data(p), format(f) {}
};

enum class GemmAlgorithm {
  // The fastest exact-enough form for the route. fp32 FMA: one pass over the H values,
  // exact in its products for every H here, so POL 0 and 1 run as that single pass; POL 2
  // rounds float16 / cbfloat16 inputs to bfloat16 first, as specified. native bf16: the
  // decomposition below (bf16 units cannot take float16 values in one pass).
  automatic,
  // The exact bf16 decomposition, pass for pass: x = hi + lo with hi = bf16(x),
  // lo = bf16(x - hi); one product over the concatenated inner dimension (4K at POL 0, 3K at
  // POL 1 dropping lo*lo, K at POL 2). The numerics of a bf16 matrix unit, on any route.
  decomposed,
};

// Which code and hardware run the products (precision/policy.hpp; chosen in gemm_route.hpp).
using precision::kMatmulRouteCount;
using precision::MatmulRoute;
using GemmRoute = precision::MatmulRoute;

struct GemmPrecision {
  Format format = Format::float32;  // the format whose values A and B hold (H)
  int passes = 1;                   // 4, 3 or 1 (precision::matmul_passes)
  GemmAlgorithm algorithm = GemmAlgorithm::automatic;
  GemmRoute route = GemmRoute::automatic;
};

// A finished block of the product (float32, before any accumulation into C): rows
// [row0, row0 + rows) and columns [col0, col0 + cols) of C, element (r, c) of the block at
// values[r * ld + c].
struct GemmTile {
  float* values;  // scratch: the epilogue may change it in place
  std::int64_t ld, row0, rows, col0, cols;
};
// Receives every block of C exactly once; called concurrently for disjoint blocks.
using GemmEpilogue = std::function<void(const GemmTile&)>;

// C (+)= op(A) op(B) into a float32 matrix (ldc). A and B must hold values of
// precision.format (the caller rounds them once); they may be stored in any format. With
// `accumulate`, C = C + P with one rounding per element, P the product.
void gemm(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
          const GemmPrecision& precision = {});
// The product handed block by block to `epilogue` (bias, activation, rounding to H, a
// re-layout: whatever the caller fuses into writing C). Runs on all threads.
void gemm(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
          const GemmPrecision& precision = {});

// The same two, on the calling thread only: for calls from inside an OpenMP parallel region.
void gemm_in_thread(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                    const GemmPrecision& precision = {});
void gemm_in_thread(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
                    const GemmPrecision& precision = {});

// Whether gemm(s, a, b, ..., p) on all threads reads an operand stored in 16 or 8 bits
// through a float32 copy made for the call: its route (as far as known_route knows it) is
// onednn_fp32 in one pass, where an operand stored as float32 is read in place. A caller that
// multiplies one such operand twice can decode it once and hand both products the float32
// values (decoding is exact: the products multiply the same values).
bool gemm_copies_to_float32(const GemmShape& s, const GemmPrecision& p);
// Likewise for a bfloat16 copy: the route is onednn_bf16 in one pass, which reads an operand
// stored as bfloat16 in place and copies one stored in another format (fp8 codes) to
// bfloat16 for the call. A caller multiplying one fp8 operand twice can convert it to
// bfloat16 once (exact: fp8 values are bfloat16 values).
bool gemm_copies_to_bf16(const GemmShape& s, const GemmPrecision& p);

// The scalar twin of the fp32 FMA route: per element of C one std::fma chain over k in order
// (over the passes' concatenated inner dimension when decomposed), then C = P or C + P. The
// fp32 route gives exactly these bits.
void gemm_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
              const GemmPrecision& precision = {});

// The scalar twin of the bf16 route (mantissa's GEMM on the AVX512-BF16 dot instruction):
// the passes of the exact bf16 split as on bf16 units (precision.format's values split into
// bf16 hi / lo parts; bfloat16 and fp8 values are one pass), each pass's inner dimension
// taken in pairs (a missing last odd element reads as zero), and per pair, in this order,
//   acc = ftz(acc + a[2p+1] b[2p+1]);  acc = ftz(acc + a[2p] b[2p])
// with each product exact, each sum rounded to float32, subnormal inputs read as zero and
// subnormal sums flushed to zero (the instruction's definition). The bf16 route gives
// exactly these bits. precision.format must not be float32 (not bf16 values).
void gemm_bf16_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                   const GemmPrecision& precision = {});

// The scalar twin of the amx route (mantissa's GEMM on AMX tiles): the same passes, each
// pass's inner dimension in chunks of 32 values (16 pairs; the last chunk padded with zeros)
// from its start, each chunk as one TDPBF16PS adds it (amx_pairs.hpp: the even and the odd
// products in two float32 chains, then their sum added to the accumulator), starting from
// +0. The amx route gives exactly these bits. precision.format must not be float32.
void gemm_amx_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                  const GemmPrecision& precision = {});

// Plain oneDNN fp32 matmul on float32 buffers (primitives cached per shape): the peer the
// benchmarks compare the fp32 FMA route with.
void gemm_onednn_f32(const GemmShape& s, const float* a, const float* b, float* c, bool accumulate);

}  // namespace mantissa::kernels
