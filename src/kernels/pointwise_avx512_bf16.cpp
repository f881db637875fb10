// The bfloat16 kernels rounded by AVX512-BF16's conversion instruction: compiled with
// -mavx512f -mavx512bw -mavx512bf16, entered only where the CPU has AVX512-BF16
// (pointwise_avx512.cpp).
#include <immintrin.h>

#include "mantissa/numerics/avx512_gcc12.hpp"  // after <immintrin.h>

#include "gelu_lanes_avx512.hpp"

namespace mantissa::kernels::detail {
namespace {

// 16 lanes rounded to bfloat16 at out by the conversion instruction (bf16_words_by_unit).
struct UnitRounding {
  static void store(std::uint16_t* out, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bf16_words_by_unit(v));
  }
};

}  // namespace

void gelu_forward_bf16_by_unit(const std::uint16_t* x, std::uint16_t* y, std::int64_t n) {
  map_rounded<UnitRounding>(y, n, GeluForward16(), x);
}

void gelu_backward_bf16_by_unit(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                                std::int64_t n) {
  map_rounded<UnitRounding>(dx, n, GeluBackward16(), x, dy);
}

void add_bf16_by_unit(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                      std::int64_t n) {
  map_rounded<UnitRounding>(y, n, Add16(), a, b);
}

}  // namespace mantissa::kernels::detail
