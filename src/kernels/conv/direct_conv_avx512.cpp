// Compiled with -mavx512f; entered only when numerics::active_simd_path() is avx512
// (direct_conv.cpp). The direct convolutions' bodies (direct_conv_parts.hpp) 16 lanes wide,
// the weight gradient two output channels an item (each read of the image serves both).
#include <immintrin.h>

#include "direct_conv_parts.hpp"

namespace mantissa::kernels::conv_detail {
namespace {

struct Avx512Lanes {
  static constexpr std::int64_t kWidth = 16;
  using Vec = __m512;
  using Mask = __mmask16;
  static Mask mask(std::int64_t n) {
    return n >= 16 ? static_cast<Mask>(0xffff) : static_cast<Mask>((1u << (n < 0 ? 0 : n)) - 1);
  }
  static Vec load(const float* p, bool full, Mask m) {
    return full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  }
  static void store(float* p, Vec v, bool full, Mask m) {
    if (full) {
      _mm512_storeu_ps(p, v);
    } else {
      _mm512_mask_storeu_ps(p, m, v);
    }
  }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float x) { return _mm512_set1_ps(x); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static float sum(Vec v) {
    alignas(64) float l[kWidth];
    _mm512_store_ps(l, v);
    float s = 0.0f;
    for (float x : l) s += x;
    return s;
  }
};

}  // namespace

void forward_items_avx512(const ForwardJob& job, std::int64_t i0, std::int64_t i1) {
  forward_items<Avx512Lanes>(job, i0, i1);
}

void weights_items_avx512(const WeightsJob& job, std::int64_t i0, std::int64_t i1) {
  weights_items<Avx512Lanes, kAvx512ChannelsPerItem>(job, i0, i1);
}

}  // namespace mantissa::kernels::conv_detail
