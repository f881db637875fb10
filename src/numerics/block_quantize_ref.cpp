// The scalar twins of the block quantizers: tile by tile, amax by comparisons on |x|, one
// codec call per element. They define the bits quantize_mx / _nvfp4 / _fp8_blocks give.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "block_scaling_detail.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics {
namespace {

// The largest |x| of rows r0..r1 x cols c0..c1 (NaN when one is NaN).
float tile_amax(const float* x, std::int64_t cols, std::int64_t r0, std::int64_t r1,
                std::int64_t c0, std::int64_t c1) {
  float m = 0.0f;
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float a = std::fabs(x[r * cols + c]);
      if (std::isnan(a)) return std::numeric_limits<float>::quiet_NaN();
      m = a > m ? a : m;
    }
  }
  return m;
}

template <class ScaleOf>
void quantize_tiles_ref(const float* x, BlockQuantized& q, const ScaleOf& scale_of,
                        Rounding rounding, std::uint64_t seed, std::uint64_t counter,
                        bool plus_zero) {
  const Layout& l = layout(q.element);
  const std::int64_t grid_cols = q.tile_grid_cols();
  for (std::int64_t tr = 0; tr < q.tile_grid_rows(); ++tr) {
    for (std::int64_t tc = 0; tc < grid_cols; ++tc) {
      const std::int64_t r0 = tr * q.tile.rows, r1 = std::min(q.rows, r0 + q.tile.rows);
      const std::int64_t c0 = tc * q.tile.cols, c1 = std::min(q.cols, c0 + q.tile.cols);
      const detail::TileScale s = scale_of(tile_amax(x, q.cols, r0, r1, c0, c1));
      q.scales[static_cast<std::size_t>(tr * grid_cols + tc)] = s.decode;
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::int64_t i = r * q.cols + c;
          float v = x[i] * s.encode;
          if (plus_zero && v == 0.0f) v = 0.0f;
          const std::uint32_t random =
              stochastic_bits(seed, counter + static_cast<std::uint64_t>(i));
          const std::uint32_t code =
              s.nan ? 0u : encode(v, l, rounding, Overflow::saturate, random);
          detail::put_code(q, i, static_cast<std::uint8_t>(code));
        }
      }
    }
  }
}

}  // namespace

BlockQuantized quantize_mx_ref(const float* x, std::int64_t rows, std::int64_t cols,
                               const MxSettings& s) {
  detail::check_mx(s);
  BlockQuantized q = detail::make_result(rows, cols, s.tile, s.element, Format::float8_e8m0, "MX");
  quantize_tiles_ref(
      x, q, [&](float amax) { return detail::mx_tile_scale(amax, s.element, s.rule); }, s.rounding,
      s.seed, s.counter, false);
  return q;
}

BlockQuantized quantize_nvfp4_ref(const float* x, std::int64_t rows, std::int64_t cols,
                                  const Nvfp4Settings& s) {
  detail::check_nvfp4(s, cols);
  BlockQuantized q =
      detail::make_result(rows, cols, s.tile, Format::float4_e2m1, Format::float8_e4m3, "NVFP4");
  std::vector<float> rotated;
  if (s.hadamard) {
    rotated.assign(x, x + rows * cols);
    hadamard16_rows_ref(rotated.data(), rows, cols);
    x = rotated.data();
  }
  const float global_encode = nvfp4_global_encode_scale(tile_amax(x, cols, 0, rows, 0, cols));
  const float global_decode = 1.0f / global_encode;
  q.tensor_scale = global_decode;
  quantize_tiles_ref(
      x, q,
      [&](float amax) { return detail::nvfp4_tile_scale(amax, global_encode, global_decode); },
      s.rounding, s.seed, s.counter, true);
  return q;
}

BlockQuantized quantize_fp8_blocks_ref(const float* x, std::int64_t rows, std::int64_t cols,
                                       const Fp8BlockSettings& s) {
  detail::check_fp8_blocks(s);
  BlockQuantized q =
      detail::make_result(rows, cols, s.tile, s.element, Format::float32, "fp8 blocks");
  quantize_tiles_ref(
      x, q, [&](float amax) { return detail::fp8_tile_scale(amax, s); }, s.rounding, s.seed,
      s.counter, false);
  return q;
}

}  // namespace mantissa::numerics
