#include "mantissa/kernels/bf16_pairs.hpp"

#include <algorithm>
#include <cstring>

#include "bf16_dot_step.hpp"
#include "bf16_pairs_avx512.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "row_prefetch.hpp"

namespace mantissa::kernels {
namespace {

float bf16_value(std::uint32_t half) {
  const std::uint32_t bits = half << 16;
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

void require_units(const char* what) {
  if (!bf16_pairs_available()) {
    throw Error(std::string(what) + ": this CPU lacks AVX512-BF16 / AVX512BW (it has: " +
                numerics::describe(numerics::cpu_features()) + ")");
  }
}

}  // namespace

bool bf16_pairs_available() {
  const numerics::CpuFeatures& f = numerics::cpu_features();
  return f.avx512f && f.avx512bw && f.avx512_bf16;
}

PairRange band_range(const PairBand& band, std::int64_t i, std::int64_t rows, std::int64_t n,
                     std::int64_t pairs) {
  const std::int64_t last_row = i + rows - 1, o = band.offset;
  switch (band.kind) {
    case PairBand::Kind::columns_below:
      return {std::clamp<std::int64_t>(last_row + o, 0, n), 0, pairs};
    case PairBand::Kind::pairs_below:  // 2p < last_row + o
      return {n, 0, std::clamp<std::int64_t>((last_row + o + 1) / 2, 0, pairs)};
    case PairBand::Kind::pairs_from:  // 2p + 1 >= i - o
      return {n, std::clamp<std::int64_t>((i - o) / 2, 0, pairs), pairs};
    case PairBand::Kind::whole:
      break;
  }
  return {n, 0, pairs};
}

void bf16_pair_product(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a, PairCols b,
                       float* c, std::int64_t ldc, bool accumulate, PairBand band) {
  require_units("bf16_pair_product");
  detail::bf16_pair_product_avx512(m, n, pairs, a, b, c, ldc, accumulate, band);
}

void bf16_pair_product_ref(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                           PairCols b, float* c, std::int64_t ldc, bool accumulate, PairBand band) {
  for (std::int64_t i = 0; i < m; ++i) {
    const PairRange r = band_range(band, i, 1, n, pairs);
    for (std::int64_t j = 0; j < r.end; ++j) {
      float acc = accumulate ? c[i * ldc + j] : 0.0f;
      for (std::int64_t p = r.first; p < r.last; ++p) {
        const std::uint32_t x = a.data[i * a.row_stride + p * a.pair_stride];
        const std::uint32_t y = b.data[p * b.ld + j];
        acc = detail::dot_step(acc, bf16_value(x >> 16), bf16_value(y >> 16));
        acc = detail::dot_step(acc, bf16_value(x & 0xFFFFu), bf16_value(y & 0xFFFFu));
      }
      c[i * ldc + j] = acc;
    }
  }
}

void to_bf16_rows(const float* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                  std::uint16_t* out, std::int64_t ldo) {
  if (bf16_pairs_available()) {
    detail::to_bf16_rows_avx512(x, rows, n, ldx, out, ldo);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    prefetch_row_ahead(out, r, rows, ldo * 2, n * 2, true);
    numerics::encode_array(x + r * ldx, static_cast<std::size_t>(n), numerics::Format::bfloat16,
                           out + r * ldo);
    if (n % 2 != 0) out[r * ldo + n] = 0;
  }
}

void interleave_row_pairs(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                          std::int64_t ldx, std::uint32_t* out, std::int64_t ldo) {
  if (bf16_pairs_available()) {
    detail::interleave_row_pairs_avx512(x, rows, n, ldx, out, ldo);
    return;
  }
  interleave_row_pairs_ref(x, rows, n, ldx, out, ldo);
}

void interleave_row_pairs_ref(const std::uint16_t* x, std::int64_t rows, std::int64_t n,
                              std::int64_t ldx, std::uint32_t* out, std::int64_t ldo) {
  for (std::int64_t p = 0; 2 * p < rows; ++p) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::uint32_t lo = x[2 * p * ldx + j];
      const std::uint32_t hi = 2 * p + 1 < rows ? x[(2 * p + 1) * ldx + j] : 0u;
      out[p * ldo + j] = lo | hi << 16;
    }
  }
}

}  // namespace mantissa::kernels
