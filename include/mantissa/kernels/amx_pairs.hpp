#pragma once
// Products on AMX tiles (TDPBF16PS), for mantissa's own `amx` route: the blocked GEMM's AMX
// micro-kernel and the fused attention heads, whose operands are bf16 pair words (a word
// holds two bf16 values consecutive along the reduction: element 2p in the low half).
//
// What one TDPBF16PS does to an element of C, measured on an Intel Xeon (family 6 model 207)
// against exact arithmetic over every exponent range (normal, subnormal, overflowing inputs,
// signed zeros) and written down here as the definition the scalar twins follow bit for bit:
// over a chunk of 16 pairs (32 bf16 values along the reduction),
//   ev = +0;  od = +0
//   for k in 0..15:  ev = ftz(fma(daz(a[2k]),   daz(b[2k]),   ev))
//                    od = ftz(fma(daz(a[2k+1]), daz(b[2k+1]), od))
//   c  = ftz(daz(c) + ftz(ev + od))
// in float32 with rounding to nearest even; daz reads a subnormal input as a zero of its sign,
// ftz flushes a subnormal result to a zero of its sign. Products are exact (bf16 x bf16), so
// each fma is one rounding of a sum of two terms: the even and the odd products accumulate in
// two separate float32 chains and meet at the end of each chunk. A reduction is taken in
// chunks of 16 pairs from its start, the last chunk padded with zero pairs.
#include <cstdint>
#include <string>

#include "mantissa/kernels/bf16_pairs.hpp"

namespace mantissa::kernels {

// The CPU has AMX-BF16 tiles and the operating system lets this process use them (Linux asks
// for permission once: arch_prctl ARCH_REQ_XCOMP_PERM). "" when it can, else the reason. The
// environment variable MANTISSA_AMX=off turns mantissa's own AMX code off (to time an AMX CPU
// as one without; oneDNN's AMX is ONEDNN_MAX_CPU_ISA's to turn off). Asked once per process.
// Any other value of MANTISSA_AMX than off, on or empty keeps the tiles unused (the reason
// names the value); a program refuses it at start with amx_setting_error().
const std::string& amx_unavailable();
bool amx_available();
// "" when MANTISSA_AMX is unset, empty, on or off; else the message naming its value.
std::string amx_setting_error();

// One chunk of a TDPBF16PS element: c after adding the products of `pairs` (<= 16) word
// pairs a[p], b[p] (the rest of the chunk zero), as defined above.
float amx_chunk_ref(float c, const std::uint32_t* a, std::int64_t a_stride, const std::uint32_t* b,
                    std::int64_t b_stride, std::int64_t pairs);

// c[i * ldc + j] (i < m, j < n) = (accumulate ? c : 0), then every chunk of 16 pairs added as
// above, chunks in increasing order. a must hold its rows' pairs consecutively
// (a.pair_stride == 1). Throws mantissa::Error where !amx_available().
void amx_pair_product(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a, PairCols b,
                      float* c, std::int64_t ldc, bool accumulate);
// The scalar twin (bit for bit the same results; any pair_stride).
void amx_pair_product_ref(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                          PairCols b, float* c, std::int64_t ldc, bool accumulate);

}  // namespace mantissa::kernels
