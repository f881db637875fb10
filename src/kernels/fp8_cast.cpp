#include "mantissa/kernels/fp8_cast.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::kernels {
namespace {

using numerics::Format;

// Adds the facts of x (the source values) and v = x * scale (what is encoded) to s.
struct Tally {
  float max_finite, half_subnormal;
  Fp8CastStats s;
  bool nan = false;
  void add(const float* x, const float* v, std::int64_t n) {
    float amax = s.amax;
    std::int64_t over = 0, under = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float a = std::fabs(x[i]), b = std::fabs(v[i]);
      nan |= std::isnan(a);
      amax = std::max(amax, a);
      over += b > max_finite ? 1 : 0;
      under += (a != 0.0f && b <= half_subnormal) ? 1 : 0;
    }
    s.amax = amax;
    s.overflows += over;
    s.underflows += under;
  }
  Fp8CastStats result() const {
    Fp8CastStats r = s;
    if (nan) r.amax = NAN;
    return r;
  }
};

Tally make_tally(Format fp8) {
  const numerics::FormatTraits& t = numerics::traits(fp8);
  // Nearest-even sends exactly half the smallest subnormal to 0 (the even neighbour).
  return {static_cast<float>(t.max), static_cast<float>(t.min_subnormal / 2), {}, false};
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
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    Tally& t = parts[static_cast<std::size_t>(omp_get_thread_num())];
    alignas(64) float x[kTile], v[kTile];
    for (std::int64_t i = begin; i < end; i += kTile) {
      const std::int64_t m = std::min(kTile, end - i);
      numerics::decode_array(static_cast<const char*>(src) + i * in_bytes,
                             static_cast<std::size_t>(m), src_format, x);
      for (std::int64_t j = 0; j < m; ++j) v[j] = x[j] * scale;
      t.add(x, v, m);
      numerics::encode_array(v, static_cast<std::size_t>(m), fp8, static_cast<char*>(dst) + i,
                             saturating());
    }
  });
  Tally all = make_tally(fp8);
  for (const Tally& t : parts) {
    all.s.amax = std::max(all.s.amax, t.s.amax);
    all.s.overflows += t.s.overflows;
    all.s.underflows += t.s.underflows;
    all.nan |= t.nan;
  }
  return all.result();
}

Fp8CastStats cast_to_fp8_ref(const void* src, Format src_format, std::int64_t n, float scale,
                             Format fp8, void* dst) {
  Tally t = make_tally(fp8);
  const int in_bytes = numerics::traits(src_format).storage_bytes;
  const numerics::Layout& l = numerics::layout(fp8);
  for (std::int64_t i = 0; i < n; ++i) {
    float x;
    numerics::decode_array_ref(static_cast<const char*>(src) + i * in_bytes, 1, src_format, &x);
    const float v = x * scale;
    t.add(&x, &v, 1);
    static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(
        numerics::encode(v, l, numerics::Rounding::nearest_even, numerics::Overflow::saturate));
  }
  return t.result();
}

}  // namespace mantissa::kernels
