#include "packing.hpp"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "mantissa/numerics/cbfloat16_avx2.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pair_panels_avx512.hpp"

namespace mantissa::kernels::gemm_detail {
namespace {

// An fp8 format's 256 values, decoded once by the codec.
struct Fp8Table {
  alignas(64) float value[256];
  explicit Fp8Table(Format f) {
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<std::uint8_t>(b);
      numerics::decode_array(&byte, 1, f, &value[b]);
    }
  }
};
const float* fp8_table(Format f) {
  static const Fp8Table e4m3(Format::float8_e4m3), e5m2(Format::float8_e5m2);
  return f == Format::float8_e4m3 ? e4m3.value : e5m2.value;
}

// cbfloat16 (1/6/9, bias 31): numerics::avx2::cbfloat16_magnitudes8 (normal numbers rebiased
// in integers, subnormals and zero by an exact conversion, whatever the FTZ/DAZ flags say),
// the sign put back. A group with an infinity or NaN (E = 63) goes through the codec.
inline __m256 cbfloat16_8(const std::uint16_t* p) {
  const __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(0x7fff));
  const __m256i top = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32((63 << 9) - 1));
  if (_mm256_testz_si256(top, top)) {
    const __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(b, 15), 31);
    return _mm256_castsi256_ps(_mm256_or_si256(numerics::avx2::cbfloat16_magnitudes8(mag), sign));
  }
  alignas(32) float out[8];
  numerics::decode_array(p, 8, Format::cbfloat16, out);
  return _mm256_load_ps(out);
}

// 8 consecutive elements starting at index i, as float32.
inline __m256 load8(const void* base, Format f, std::int64_t i) {
  switch (f) {
    case Format::bfloat16: {
      const __m128i h = _mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    case Format::float16:
      return _mm256_cvtph_ps(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i)));
    case Format::cbfloat16:
      return cbfloat16_8(static_cast<const std::uint16_t*>(base) + i);
    case Format::float8_e4m3:
    case Format::float8_e5m2: {
      const __m128i bytes = _mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(static_cast<const std::uint8_t*>(base) + i));
      return _mm256_i32gather_ps(fp8_table(f), _mm256_cvtepu8_epi32(bytes), 4);
    }
    default:
      return _mm256_loadu_ps(static_cast<const float*>(base) + i);
  }
}

inline float load1(const void* base, Format f, std::int64_t i) {
  switch (f) {
    case Format::bfloat16: {
      const std::uint32_t u = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(base)[i])
                              << 16;
      float v;
      std::memcpy(&v, &u, sizeof v);
      return v;
    }
    case Format::float16:
      return _cvtsh_ss(static_cast<const std::uint16_t*>(base)[i]);
    case Format::cbfloat16: {
      const std::uint32_t b = static_cast<const std::uint16_t*>(base)[i];
      const std::uint32_t mag = b & 0x7fffu;
      float v;
      if (mag >= (1u << 9) && mag < (63u << 9)) {  // normal: as cbfloat16_8 does
        const std::uint32_t u = ((b >> 15) << 31) | ((mag << 14) + (96u << 23));
        std::memcpy(&v, &u, sizeof v);
      } else {
        numerics::decode_array(static_cast<const std::uint16_t*>(base) + i, 1, f, &v);
      }
      return v;
    }
    case Format::float8_e4m3:
    case Format::float8_e5m2:
      return fp8_table(f)[static_cast<const std::uint8_t*>(base)[i]];
    default:
      return static_cast<const float*>(base)[i];
  }
}

inline void transpose8(__m256 v[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Up to 8 source lines, each contiguous along k: line l starts at element start[l] of base.
struct Lines {
  const void* base;
  Format format;
  std::int64_t start[8];
  int count;  // lines present; the rest read as zero
};

// The first n (1 to 8) lanes of v to out, by plain stores of 4, 2 and 1 lanes (AMD's masked
// stores, vmaskmovps, are slow: with them this packing took 14% of an AVX2 product's time on
// Zen 3, with these 9%).
inline void store_lanes(float* out, __m256 v, int n) {
  if (n == 8) {
    _mm256_storeu_ps(out, v);
    return;
  }
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(out, part);
    part = _mm256_extractf128_ps(v, 1);
    out += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(out), part);
    part = _mm_movehl_ps(part, part);
    out += 2;
    n -= 2;
  }
  if (n == 1) _mm_store_ss(out, part);
}

// dst[k * stride + l] = line l at depth k, for k < kc and l < lines.count (8 lanes written
// when count is 8, else only count).
void transpose_lines(const Lines& in, std::int64_t kc, float* dst, std::int64_t stride) {
  const int n = in.count;
  std::int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 v[8];
    for (int l = 0; l < 8; ++l) {
      v[l] = l < n ? load8(in.base, in.format, in.start[l] + k) : _mm256_setzero_ps();
    }
    transpose8(v);
    for (int c = 0; c < 8; ++c) store_lanes(dst + (k + c) * stride, v[c], n);
  }
  for (; k < kc; ++k) {
    for (int l = 0; l < n; ++l) dst[k * stride + l] = load1(in.base, in.format, in.start[l] + k);
  }
}

// `lines` lines (each contiguous along k, `line_stride` elements apart, the first at
// `first`) into panels of `width` lanes: panel q at dst + q * kc * width, lane i of line
// q * width + i; lanes past `lines` are zero.
void pack_transposed(const Operand& x, std::int64_t first, std::int64_t line_stride,
                     std::int64_t lines, std::int64_t kc, int width, float* dst) {
  const std::int64_t panels = (lines + width - 1) / width;
  for (std::int64_t q = 0; q < panels; ++q) {
    float* panel = dst + q * kc * width;
    for (int g = 0; g < width; g += 8) {
      Lines in{x.data, x.format, {}, 0};
      const int group = std::min(8, width - g);
      for (int l = 0; l < group; ++l) {
        const std::int64_t line = q * width + g + l;
        if (line >= lines) break;
        in.start[l] = first + line * line_stride;
        in.count = l + 1;
      }
      if (in.count < group) {
        // Lanes of this group past the last line: zero (the masked store leaves them alone).
        for (std::int64_t k = 0; k < kc; ++k) {
          std::fill(panel + k * width + g + in.count, panel + k * width + g + group, 0.0f);
        }
      }
      if (in.count == 0) continue;
      transpose_lines(in, kc, panel + g, width);
    }
  }
}

// How many depth rows ahead pack_straight asks for (12: the packing of a transposed 2048-deep
// operand went from 29% to 21% of an AVX2 product's time on Zen 3; 4 did less).
constexpr std::int64_t kPrefetchRows = 12;

// Depth rows contiguous along the lanes: row k of the block starts at element
// first + k * row_stride; `lanes` lanes go into panels of `width`.
void pack_straight(const Operand& x, std::int64_t first, std::int64_t row_stride,
                   std::int64_t lanes, std::int64_t kc, int width, float* dst) {
  const std::int64_t panels = (lanes + width - 1) / width;
  const std::int64_t bytes = numerics::traits(x.format).storage_bytes;
  for (std::int64_t k = 0; k < kc; ++k) {
    const std::int64_t at = first + k * row_stride;
    if (k + kPrefetchRows < kc) {
      // Rows far apart (a transposed operand's) start on new pages, where the hardware's
      // prefetchers stop: ask for a later row's lines now.
      const char* ahead =
          static_cast<const char*>(x.data) + (at + kPrefetchRows * row_stride) * bytes;
      for (std::int64_t line = 0; line < lanes * bytes; line += 64)
        _mm_prefetch(ahead + line, _MM_HINT_T0);
    }
    for (std::int64_t q = 0; q < panels; ++q) {
      float* out = dst + q * kc * width + k * width;
      const std::int64_t have = std::min<std::int64_t>(width, lanes - q * width);
      std::int64_t j = 0;
      for (; j + 8 <= have; j += 8)
        _mm256_storeu_ps(out + j, load8(x.data, x.format, at + q * width + j));
      if (j < have && q * width + j + 8 <= lanes) {
        // A panel narrower than 8 lanes (AVX2's 6-row A panels) with 8 lanes of the row left
        // to read: one vector, its first lanes stored.
        store_lanes(out + j, load8(x.data, x.format, at + q * width + j),
                    static_cast<int>(have - j));
        j = have;
      }
      for (; j < have; ++j) out[j] = load1(x.data, x.format, at + q * width + j);
      std::fill(out + have, out + width, 0.0f);
    }
  }
}

}  // namespace

void pack_a(const MatrixRef& a, std::int64_t r0, std::int64_t rows, std::int64_t k0,
            std::int64_t kc, Part part, int mr, float* dst) {
  if (a.trans) {
    // op(A) rows are contiguous at each depth: A(r, k) at k * ld + r.
    pack_straight(a.x, k0 * a.ld + r0, a.ld, rows, kc, mr, dst);
  } else {
    // Each row is contiguous along k: A(r, k) at r * ld + k.
    pack_transposed(a.x, r0 * a.ld + k0, a.ld, rows, kc, mr, dst);
  }
  apply_part(dst, ((rows + mr - 1) / mr) * mr * kc, part);
}

void pack_b(const MatrixRef& b, std::int64_t k0, std::int64_t kc, std::int64_t c0,
            std::int64_t cols, Part part, int nr, float* dst) {
  if (b.trans) {
    // Each column is contiguous along k: B(k, c) at c * ld + k.
    pack_transposed(b.x, c0 * b.ld + k0, b.ld, cols, kc, nr, dst);
  } else {
    // Depth rows are contiguous across the columns: B(k, c) at k * ld + c.
    pack_straight(b.x, k0 * b.ld + c0, b.ld, cols, kc, nr, dst);
  }
  apply_part(dst, ((cols + nr - 1) / nr) * nr * kc, part);
}

}  // namespace mantissa::kernels::gemm_detail

namespace mantissa::kernels::gemm_detail {

void pair_panel(const float* src, std::int64_t kc, int width, std::uint32_t* dst) {
  const auto bits = [](float x) { return std::bit_cast<std::uint32_t>(x); };
  const std::int64_t full = kc / 2;
  for (std::int64_t p = 0; p < full; ++p) {
    const float* even = src + 2 * p * width;
    const float* odd = even + width;
    std::uint32_t* out = dst + p * width;
    for (int x = 0; x < width; ++x) out[x] = (bits(odd[x]) & 0xffff0000u) | (bits(even[x]) >> 16);
  }
  if (kc % 2 != 0) {
    const float* even = src + (kc - 1) * width;
    std::uint32_t* out = dst + full * width;
    for (int x = 0; x < width; ++x) out[x] = bits(even[x]) >> 16;
  }
}

bool pair_panel_bf16_ref(const MatrixRef& x, bool a_side, std::int64_t line0, std::int64_t lines,
                         std::int64_t k0, std::int64_t kc, Part part, int width,
                         std::int64_t padded, bool rows_layout, std::uint32_t* dst) {
  if (x.x.format != Format::bfloat16 || part == Part::lo) return false;
  const auto* base = static_cast<const std::uint16_t*>(x.x.data);
  // Lines run along the storage's rows (each line's depths contiguous) for A as stored and
  // for B transposed; else each depth's lines are contiguous.
  const bool lines_contiguous = a_side != x.trans;
  const std::int64_t pairs = (kc + 1) / 2;
  // Word p of line l: depths 2p (low half) and 2p + 1 (high half; zero past kc).
  const auto half = [&](std::int64_t l, std::int64_t k) -> std::uint32_t {
    if (k >= kc) return 0u;
    return lines_contiguous ? base[(line0 + l) * x.ld + k0 + k] : base[(k0 + k) * x.ld + line0 + l];
  };
  if (rows_layout) {
    if (!lines_contiguous) {  // two depth rows interleaved, each word to its line's row
      for (std::int64_t p = 0; p < pairs; ++p) {
        const std::uint16_t* even = base + (k0 + 2 * p) * x.ld + line0;
        const std::uint16_t* odd = 2 * p + 1 < kc ? even + x.ld : nullptr;
        for (std::int64_t l = 0; l < lines; ++l) {
          dst[l * padded + p] = static_cast<std::uint32_t>(even[l]) |
                                (odd != nullptr ? static_cast<std::uint32_t>(odd[l]) << 16 : 0u);
        }
      }
    }
    for (std::int64_t l = 0; l < width; ++l) {
      std::uint32_t* out = dst + l * padded;
      if (l >= lines) {
        std::fill(out, out + padded, 0u);
        continue;
      }
      if (lines_contiguous) {  // the line's depths are the words already
        std::memcpy(out, base + (line0 + l) * x.ld + k0, static_cast<std::size_t>(kc) * 2);
        if (kc % 2 != 0) out[kc / 2] &= 0xFFFFu;
      }
      std::fill(out + pairs, out + padded, 0u);
    }
    return true;
  }
  for (std::int64_t p = 0; p < pairs; ++p) {
    std::uint32_t* out = dst + p * width;
    if (lines_contiguous) {
      for (std::int64_t l = 0; l < lines; ++l) out[l] = half(l, 2 * p) | half(l, 2 * p + 1) << 16;
    } else {  // two depth rows interleaved
      const std::uint16_t* even = base + (k0 + 2 * p) * x.ld + line0;
      const std::uint16_t* odd = even + x.ld;
      const bool has_odd = 2 * p + 1 < kc;
      for (std::int64_t l = 0; l < lines; ++l) {
        out[l] = static_cast<std::uint32_t>(even[l]) |
                 (has_odd ? static_cast<std::uint32_t>(odd[l]) << 16 : 0u);
      }
    }
    std::fill(out + lines, out + width, 0u);
  }
  std::fill(dst + pairs * width, dst + padded * width, 0u);
  return true;
}

bool pair_panels_bf16_across(const MatrixRef& x, bool a_side, std::int64_t line0,
                             std::int64_t lines, std::int64_t k0, std::int64_t kc, Part part,
                             int width, std::int64_t padded, std::uint32_t* dst) {
  const bool lines_contiguous = a_side != x.trans;
  if (x.x.format != Format::bfloat16 || part == Part::lo || lines_contiguous ||
      numerics::active_simd_path() != numerics::SimdPath::avx512) {
    return false;
  }
  const auto* base = static_cast<const std::uint16_t*>(x.x.data) + k0 * x.ld + line0;
  pair_panels_across_avx512(base, x.ld, kc, lines, width, padded, dst);
  return true;
}

bool pair_panel_bf16(const MatrixRef& x, bool a_side, std::int64_t line0, std::int64_t lines,
                     std::int64_t k0, std::int64_t kc, Part part, int width, std::int64_t padded,
                     bool rows_layout, std::uint32_t* dst) {
  const bool lines_contiguous = a_side != x.trans;
  // The two layouts that read or write across lines go to AVX-512; the others are row
  // copies and row interleaves the compiler vectorizes.
  if (lines_contiguous == rows_layout ||
      numerics::active_simd_path() != numerics::SimdPath::avx512) {
    return pair_panel_bf16_ref(x, a_side, line0, lines, k0, kc, part, width, padded, rows_layout,
                               dst);
  }
  if (x.x.format != Format::bfloat16 || part == Part::lo) return false;
  const auto* base = static_cast<const std::uint16_t*>(x.x.data);
  const std::int64_t pairs = (kc + 1) / 2;
  if (rows_layout) {  // A transposed for AMX: dst[l * padded + p], lines along the storage rows
    interleave_rows_transposed_avx512(base + k0 * x.ld + line0, x.ld, kc, lines, dst, padded);
    for (std::int64_t l = 0; l < width; ++l) {
      std::uint32_t* out = dst + l * padded;
      std::fill(l < lines ? out + pairs : out, out + padded, 0u);
    }
    return true;
  }
  // dst[p * width + l]: each line's depths contiguous in the storage, its pair words read
  // whole; an odd kc's last pair has only its low half.
  const std::uint16_t* first = base + line0 * x.ld + k0;
  transpose_words_avx512(first, lines, kc / 2, x.ld, dst, width, width);
  if (kc % 2 != 0) {
    std::uint32_t* out = dst + (kc / 2) * width;
    for (std::int64_t l = 0; l < lines; ++l) out[l] = first[l * x.ld + kc - 1];
    std::fill(out + lines, out + width, 0u);
  }
  std::fill(dst + pairs * width, dst + padded * width, 0u);
  return true;
}

void pair_panel_padded(const float* src, std::int64_t kc, int width, std::int64_t padded,
                       bool rows_layout, std::uint32_t* dst) {
  const std::int64_t pairs = (kc + 1) / 2;
  if (!rows_layout) {
    pair_panel(src, kc, width, dst);
    std::fill(dst + pairs * width, dst + padded * width, 0u);
    return;
  }
  const auto half = [](float x) { return std::bit_cast<std::uint32_t>(x) >> 16; };
  for (int x = 0; x < width; ++x) {
    std::uint32_t* out = dst + x * padded;
    for (std::int64_t p = 0; p < kc / 2; ++p) {
      out[p] = half(src[(2 * p + 1) * width + x]) << 16 | half(src[2 * p * width + x]);
    }
    if (kc % 2 != 0) out[kc / 2] = half(src[(kc - 1) * width + x]);
    std::fill(out + pairs, out + padded, 0u);
  }
}

}  // namespace mantissa::kernels::gemm_detail
