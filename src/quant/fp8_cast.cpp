#include "mantissa/quant/fp8_cast.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "block_bands.hpp"
#include "fp8_cast_avx512.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::quant {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

using numerics::Format;

std::uint32_t magnitude_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b & 0x7FFFFFFFu;
}

float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

constexpr std::uint32_t kInfBits = 0x7F800000u;

// Adds the facts of x (the source values) and v = x * scale (what is encoded) to s. On the
// magnitudes' bit patterns, which order non-negative floats as integers do (NaNs above
// infinity): integer compares and maxima the compiler vectorizes.
struct Tally {
  std::uint32_t max_finite, half_subnormal;  // as magnitude bits
  std::uint32_t amax = 0;                    // bits of max |x| (a NaN's bits when x held one)
  std::int64_t overflows = 0, underflows = 0;
  void scale_and_add(const float* x, float* v, std::int64_t n, float scale) {
    std::uint32_t top = amax;
    std::int64_t over = 0, under = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      v[i] = x[i] * scale;
      const std::uint32_t a = magnitude_bits(x[i]), b = magnitude_bits(v[i]);
      top = std::max(top, a);
      over += (b > max_finite) & (b <= kInfBits);  // past the max, NaN excluded
      under += (a != 0) & (b <= half_subnormal);   // nonzero, rounds to 0; NaN excluded
    }
    amax = top;
    overflows += over;
    underflows += under;
  }
  void merge(const Tally& t) {
    amax = std::max(amax, t.amax);
    overflows += t.overflows;
    underflows += t.underflows;
  }
  Fp8CastStats result() const {
    return {amax > kInfBits ? NAN : from_bits(amax), overflows, underflows};
  }
};

Tally make_tally(Format fp8) {
  const numerics::FormatTraits& t = numerics::traits(fp8);
  // Nearest-even sends exactly half the smallest subnormal to 0 (the even neighbour).
  return {magnitude_bits(static_cast<float>(t.max)),
          magnitude_bits(static_cast<float>(t.min_subnormal / 2))};
}

numerics::ConvertOptions saturating() {
  numerics::ConvertOptions o;
  o.overflow = numerics::Overflow::saturate;
  return o;
}

}  // namespace

Fp8CastStats cast_to_fp8(const void* src, Format src_format, std::int64_t n, float scale,
                         Format fp8, void* dst) {
  constexpr std::int64_t kTile = 4096;
  const int in_bytes = numerics::traits(src_format).storage_bytes;
  std::vector<Tally> parts(static_cast<std::size_t>(std::max(1, omp_get_max_threads())),
                           make_tally(fp8));
  const bool wide = numerics::active_simd_path() == numerics::SimdPath::avx512 &&
                    (src_format == Format::float32 || src_format == Format::bfloat16);
  const detail::BandGrid grid = detail::grid_of(fp8);
  const detail::ElementCodec codec = detail::codec_of(fp8);
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    Tally& t = parts[static_cast<std::size_t>(omp_get_thread_num())];
    if (wide) {
      detail::Fp8Tally w{t.amax, 0, 0};
      detail::fp8_cast_avx512(static_cast<const char*>(src) + begin * in_bytes,
                              src_format == Format::bfloat16, end - begin, scale, grid, codec,
                              t.max_finite, t.half_subnormal, w,
                              static_cast<std::uint8_t*>(dst) + begin);
      t.amax = w.amax;
      t.overflows += w.overflows;
      t.underflows += w.underflows;
      return;
    }
    alignas(64) float x[kTile], v[kTile];
    for (std::int64_t i = begin; i < end; i += kTile) {
      const std::int64_t m = std::min(kTile, end - i);
      numerics::decode_array(static_cast<const char*>(src) + i * in_bytes,
                             static_cast<std::size_t>(m), src_format, x);
      t.scale_and_add(x, v, m, scale);
      numerics::encode_array(v, static_cast<std::size_t>(m), fp8, static_cast<char*>(dst) + i,
                             saturating());
    }
  });
  Tally all = make_tally(fp8);
  for (const Tally& t : parts) all.merge(t);
  return all.result();
}

Fp8CastStats cast_to_fp8_ref(const void* src, Format src_format, std::int64_t n, float scale,
                             Format fp8, void* dst) {
  // In float arithmetic, value by value: the definitions the fast tally's bit patterns follow.
  const numerics::FormatTraits& traits = numerics::traits(fp8);
  const auto max_finite = static_cast<float>(traits.max);
  const auto half_subnormal = static_cast<float>(traits.min_subnormal / 2);
  Fp8CastStats s;
  bool nan = false;
  const int in_bytes = numerics::traits(src_format).storage_bytes;
  for (std::int64_t i = 0; i < n; ++i) {
    float x;
    numerics::decode_array_ref(static_cast<const char*>(src) + i * in_bytes, 1, src_format, &x);
    const float v = x * scale;
    nan |= std::isnan(x);
    s.amax = std::max(s.amax, std::fabs(x));
    if (std::fabs(v) > max_finite) ++s.overflows;  // inf included, NaN not
    // Nearest-even sends exactly half the smallest subnormal to 0 (the even neighbour).
    if (x != 0.0f && std::fabs(v) <= half_subnormal) ++s.underflows;
    static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(numerics::encode(
        v, traits.layout, numerics::Rounding::nearest_even, numerics::Overflow::saturate));
  }
  if (nan) s.amax = NAN;
  return s;
}

}  // namespace mantissa::quant
