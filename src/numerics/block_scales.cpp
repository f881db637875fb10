// The scale arithmetic of the block-scaled recipes (block_scaling.hpp), the checks and the
// result layout the quantizers share, dequantization and NVFP4's Hadamard rotation.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "block_scaling_detail.hpp"
#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "support/number_text.hpp"

namespace mantissa::numerics {
namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();

// 2^k as float32, k in -149..127.
float pow2f(int k) {
  return k >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23)
                   : std::bit_cast<float>(1u << (k + 149));
}

// a * b, or mantissa::Error naming `what` when it overflows int64.
std::int64_t product_or_throw(std::int64_t a, std::int64_t b, const std::string& what) {
  const std::optional<std::int64_t> p = checked_mul(a, b);
  if (!p) throw Error(what + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows");
  return *p;
}

std::string element_names() {
  std::string out;
  for (Format f : kBlockElementFormats) out += (out.empty() ? "" : ", ") + std::string(name(f));
  return out;
}

}  // namespace

namespace {

// Per format: the MX emax and the float32 reciprocal of max (rceil's multiplier), made once
// (a scale is found per block of 32: this is on the quantizers' path); emax -1: not an MX
// element format.
struct MxElementFacts {
  int emax = -1;
  float reciprocal_max = 0.0f;
};
const MxElementFacts& mx_facts(Format element) {
  static const std::array<MxElementFacts, kFormatCount> table = [] {
    // Filled explicitly: with `t{}`, g++ 12 at -O2 built the table with its last entry
    // (float8_e8m0) all zero, emax 0, so the E8M0 scale format passed as an MX element.
    std::array<MxElementFacts, kFormatCount> t;
    t.fill(MxElementFacts{});
    for (Format f : kBlockElementFormats) {
      t[static_cast<std::size_t>(f)] = {std::ilogb(traits(f).max),
                                        1.0f / static_cast<float>(traits(f).max)};
    }
    return t;
  }();
  return table[static_cast<std::size_t>(element)];
}

}  // namespace

int mx_emax(Format element) {
  const int emax = mx_facts(element).emax;
  if (emax < 0) {
    throw Error("MX element format: " + std::string(name(element)) +
                " is not one (expected one of: " + element_names() + ")");
  }
  return emax;
}

namespace {

// floor(log2(x)) of positive finite float32 bits, without a branch: a subnormal's integer
// bits u < 2^23 convert to float exactly, whose exponent field is floor(log2(u)).
inline int floor_log2_branchless(std::uint32_t u) {
  const int normal = static_cast<int>(u >> 23) - 127;
  const int sub =
      static_cast<int>(std::bit_cast<std::uint32_t>(static_cast<float>(u)) >> 23) - 127 - 149;
  return u >= 0x00800000u ? normal : sub;
}

// mx_scale_field on |amax|'s bits u, with the element's facts found by the caller; selects,
// not branches, so that the loop over a band's tiles vectorizes.
template <MxScaleRule rule>
inline std::uint8_t scale_field(std::uint32_t u, int emax, int mantissa_bits, float reciprocal) {
  std::uint32_t field = 0;
  if constexpr (rule == MxScaleRule::rceil) {
    // Transformer Engine: amax times the float32 reciprocal of max, then any mantissa bit
    // rounds the exponent up (a float32 subnormal up to 2^-127 gives 2^-127).
    const std::uint32_t q = std::bit_cast<std::uint32_t>(std::bit_cast<float>(u) * reciprocal);
    const std::uint32_t f = q >> 23, mantissa = q & 0x7fffffu;
    const bool up = mantissa > 0 && f != 0xfe && !(f == 0 && mantissa <= 0x400000u);
    field = std::min<std::uint32_t>(f + (up ? 1u : 0u), 0xfe);
  } else {
    int e = 0;  // the scale's exponent before clamping
    if constexpr (rule == MxScaleRule::floor) {
      e = floor_log2_branchless(u) - emax;
    } else if constexpr (rule == MxScaleRule::ceil) {
      const bool exact = u >= 0x00800000u ? (u & 0x7fffffu) == 0 : (u & (u - 1)) == 0;
      e = floor_log2_branchless(u) + (exact ? 0 : 1) - emax;
    } else {
      // Add half an element ulp to the float32 bits, drop the mantissa (ties away; a carry
      // moves to the next binade).
      const std::uint32_t rounded = u + (1u << (22 - mantissa_bits));
      e = (rounded >= 0x00800000u ? static_cast<int>(rounded >> 23) - 127 : -127) - emax;
    }
    field = static_cast<std::uint32_t>(std::clamp(e, -127, 127) + 127);
  }
  field = u == 0 ? 0x00u : field;
  field = u == 0x7f800000u ? 0xfeu : field;
  return static_cast<std::uint8_t>(u > 0x7f800000u ? 0xffu : field);
}

template <MxScaleRule rule>
void scale_fields(const std::uint32_t* amax_bits, std::size_t n, Format element,
                  std::uint8_t* fields) {
  const int emax = mx_emax(element), m = layout(element).mantissa_bits;
  const float reciprocal = mx_facts(element).reciprocal_max;
  for (std::size_t i = 0; i < n; ++i) {
    fields[i] = scale_field<rule>(amax_bits[i] & 0x7fffffffu, emax, m, reciprocal);
  }
}

}  // namespace

std::uint8_t mx_scale_field(float amax, Format element, MxScaleRule rule) {
  const std::uint32_t u = detail::abs_bits(amax);
  std::uint8_t field = 0;
  mx_scale_fields(&u, 1, element, rule, &field);
  return field;
}

void mx_scale_fields(const std::uint32_t* amax_bits, std::size_t n, Format element,
                     MxScaleRule rule, std::uint8_t* fields) {
  switch (rule) {
    case MxScaleRule::floor:
      return scale_fields<MxScaleRule::floor>(amax_bits, n, element, fields);
    case MxScaleRule::ceil:
      return scale_fields<MxScaleRule::ceil>(amax_bits, n, element, fields);
    case MxScaleRule::even:
      return scale_fields<MxScaleRule::even>(amax_bits, n, element, fields);
    case MxScaleRule::rceil:
      return scale_fields<MxScaleRule::rceil>(amax_bits, n, element, fields);
  }
}

float fp8_encode_scale(float amax, Format element, bool power_of_two_scale, float epsilon) {
  if (amax < epsilon) amax = epsilon;
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax)) return 1.0f;
  float scale = static_cast<float>(traits(element).max) / amax;
  if (std::isinf(scale)) scale = kFltMax;
  if (power_of_two_scale) {
    scale = std::bit_cast<float>(std::bit_cast<std::uint32_t>(scale) & 0xff800000u);
  }
  return scale;
}

float nvfp4_global_encode_scale(float global_amax) {
  float encode = detail::min_nan((448.0f * 6.0f) / global_amax, kFltMax);
  if (global_amax == 0.0f || encode == 0.0f) encode = 1.0f;
  return encode;
}

void nvfp4_tile_scales(const std::uint32_t* amax_bits, std::size_t n, float global_encode,
                       float* decode, float* encode) {
  const float multiplier = global_encode * (1.0f / 6.0f);
  const float global_decode = 1.0f / global_encode;
  constexpr float kE4m3MinNormal = 0x1p-6f;   // below: multiples of 2^-9
  constexpr float kSubnormalMagic = 0x1p14f;  // (v + 2^14) - 2^14: v to the nearest 2^-9
  for (std::size_t i = 0; i < n; ++i) {
    const float v = std::bit_cast<float>(amax_bits[i]) * multiplier;  // >= 0, or NaN
    const bool nan = v != v;
    const float clamped = nan ? v : std::min(v, 448.0f);  // min_nan(min_nan(v, max), 448)
    // e4m3, nearest-even: 3 fraction bits kept (normal), or a multiple of 2^-9; at most 448
    // stays at most 448 (e4m3's largest value), so nothing saturates.
    const std::uint32_t b = std::bit_cast<std::uint32_t>(clamped);
    const std::uint32_t normal = (b + 0x7ffffu + ((b >> 20) & 1u)) & 0xfff00000u;
    const float small = (clamped + kSubnormalMagic) - kSubnormalMagic;
    const float d =
        nan ? clamped : (clamped < kE4m3MinNormal ? small : std::bit_cast<float>(normal));
    decode[i] = d;
    const float e = 1.0f / (d * global_decode);
    encode[i] = nan ? 0.0f : std::min(e, kFltMax);  // e > 0: an infinity becomes the largest
  }
}

Nvfp4TileScale nvfp4_tile_scale(float amax, float global_encode) {
  const detail::TileScale t = detail::nvfp4_tile_scale(amax, global_encode, 1.0f / global_encode);
  return {t.decode, t.encode};
}

std::vector<std::uint8_t> BlockQuantized::scale_codes() const {
  const int width = traits(scale_format).storage_bytes;
  std::vector<std::uint8_t> out(scales.size() * static_cast<std::size_t>(width));
  for (std::size_t i = 0; i < scales.size(); ++i) {
    const std::uint32_t bits =
        scale_format == Format::float32
            ? std::bit_cast<std::uint32_t>(scales[i])
            : encode(scales[i], layout(scale_format), Rounding::nearest_even, Overflow::saturate);
    for (int b = 0; b < width; ++b) out[i * width + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
  return out;
}

double BlockQuantized::bits_per_element() const {
  const double tile_elements = static_cast<double>(tile.rows) * static_cast<double>(tile.cols);
  return layout(element).total_bits() + layout(scale_format).total_bits() / tile_elements;
}

namespace detail {

TileScale mx_tile_scale(float amax, Format element, MxScaleRule rule) {
  const std::uint8_t field = mx_scale_field(amax, element, rule);
  if (field == 0xff) return {std::numeric_limits<float>::quiet_NaN(), 0.0f, true};
  const int k = static_cast<int>(field) - 127;
  return {pow2f(k), pow2f(-k), false};
}

TileScale nvfp4_tile_scale(float amax, float global_encode, float global_decode) {
  const float multiplier = global_encode * (1.0f / 6.0f);
  float decode_scale = min_nan(amax * multiplier, kFltMax);
  decode_scale = min_nan(decode_scale, 448.0f);  // amax >= 0: the lower clamp never acts
  const Layout& e4m3 = layout(Format::float8_e4m3);
  decode_scale =
      decode(encode(decode_scale, e4m3, Rounding::nearest_even, Overflow::saturate), e4m3);
  if (std::isnan(decode_scale)) return {decode_scale, 0.0f, true};
  return {decode_scale, min_nan(1.0f / (decode_scale * global_decode), kFltMax), false};
}

TileScale fp8_tile_scale(float amax, const Fp8BlockSettings& s) {
  const float scale = fp8_encode_scale(amax, s.element, s.power_of_two, s.epsilon);
  return {1.0f / scale, scale, false};
}

BlockQuantized make_result(std::int64_t rows, std::int64_t cols, TileShape tile, Format element,
                           Format scale_format, const char* recipe) {
  if (rows < 0 || cols < 0) {
    throw Error(std::string(recipe) + ": matrix of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " (expected sizes >= 0)");
  }
  if (tile.rows < 1 || tile.cols < 1) {
    throw Error(std::string(recipe) + ": tile of " + std::to_string(tile.rows) + " x " +
                std::to_string(tile.cols) + " (expected both >= 1)");
  }
  BlockQuantized q;
  q.rows = rows;
  q.cols = cols;
  q.tile = tile;
  q.element = element;
  q.scale_format = scale_format;
  const auto n =
      static_cast<std::size_t>(product_or_throw(rows, cols, std::string(recipe) + " matrix size"));
  q.elements.assign(element == Format::float4_e2m1 ? n / 2 + n % 2 : n, 0);
  q.scales.assign(static_cast<std::size_t>(q.tile_grid_rows() * q.tile_grid_cols()), 0.0f);
  return q;
}

void check_mx(const MxSettings& s) {
  mx_emax(s.element);
}

void check_nvfp4(const Nvfp4Settings& s, std::int64_t cols) {
  if (s.hadamard && !(s.tile == TileShape{1, 16})) {
    throw Error("NVFP4 hadamard: the rotation needs 1 x 16 tiles, not " +
                std::to_string(s.tile.rows) + " x " + std::to_string(s.tile.cols));
  }
  if (s.hadamard && cols % 16 != 0) {
    throw Error("NVFP4 hadamard: " + std::to_string(cols) + " columns (expected a multiple of 16)");
  }
}

void check_fp8_blocks(const Fp8BlockSettings& s) {
  if (s.element != Format::float8_e4m3 && s.element != Format::float8_e5m2) {
    throw Error("fp8 block element format: " + std::string(name(s.element)) +
                " (expected float8_e4m3 or float8_e5m2)");
  }
  if (!(s.epsilon >= 0.0f) || std::isinf(s.epsilon)) {
    throw Error("fp8 block epsilon: " + support::value_text(s.epsilon) +
                " (expected a finite value >= 0)");
  }
}

}  // namespace detail

namespace {

// A BlockQuantized as the quantizers make it: its public fields are the caller's to change.
void check_quantized(const BlockQuantized& q) {
  if (q.rows < 0 || q.cols < 0) {
    throw Error("dequantize: matrix of " + std::to_string(q.rows) + " x " + std::to_string(q.cols) +
                " (expected sizes >= 0)");
  }
  if (q.tile.rows < 1 || q.tile.cols < 1) {
    throw Error("dequantize: tile of " + std::to_string(q.tile.rows) + " x " +
                std::to_string(q.tile.cols) + " (expected both >= 1)");
  }
  if (static_cast<std::size_t>(q.element) >= kFormatCount || q.element == Format::float8_e8m0 ||
      layout(q.element).total_bits() > 8) {
    throw Error("dequantize: element format " + std::to_string(static_cast<int>(q.element)) +
                " is not a block element format (fp8, fp6 or fp4)");
  }
  const auto n = static_cast<std::size_t>(product_or_throw(q.rows, q.cols, "dequantize size"));
  const std::size_t codes = q.element == Format::float4_e2m1 ? n / 2 + n % 2 : n;
  if (q.elements.size() != codes) {
    throw Error("dequantize: " + std::to_string(q.elements.size()) + " element bytes for " +
                std::to_string(q.rows) + " x " + std::to_string(q.cols) + " " +
                std::string(name(q.element)) + " values (expected " + std::to_string(codes) + ")");
  }
  // fp6 codes take a byte each: one with a bit above the format's 6 would read as 0 here.
  if (q.element != Format::float4_e2m1)
    require_codes_fit(q.elements.data(), n, q.element, "dequantize");
  const auto grid = static_cast<std::size_t>(
      product_or_throw(q.tile_grid_rows(), q.tile_grid_cols(), "dequantize scale grid"));
  if (q.scales.size() != grid) {
    throw Error("dequantize: " + std::to_string(q.scales.size()) + " scales for a grid of " +
                std::to_string(q.tile_grid_rows()) + " x " + std::to_string(q.tile_grid_cols()) +
                " tiles (expected " + std::to_string(grid) + ")");
  }
}

}  // namespace

void dequantize(const BlockQuantized& q, float* out) {
  check_quantized(q);
  std::array<float, 256> value{};
  const int patterns = 1 << layout(q.element).total_bits();
  for (int c = 0; c < patterns; ++c) {
    value[static_cast<std::size_t>(c)] = decode(static_cast<std::uint32_t>(c), layout(q.element));
  }
  const bool packed = q.element == Format::float4_e2m1;
  const std::int64_t grid_cols = q.tile_grid_cols();
  for (std::int64_t r = 0; r < q.rows; ++r) {
    const float* scale_row = q.scales.data() + (r / q.tile.rows) * grid_cols;
    for (std::int64_t c = 0; c < q.cols; ++c) {
      const std::int64_t i = r * q.cols + c;
      const std::uint8_t code =
          packed ? static_cast<std::uint8_t>(
                       (q.elements[static_cast<std::size_t>(i / 2)] >> (4 * (i % 2))) & 0x0fu)
                 : q.elements[static_cast<std::size_t>(i)];
      out[i] = (value[code] * scale_row[c / q.tile.cols]) * q.tensor_scale;
    }
  }
}

void hadamard16_rows_ref(float* x, std::int64_t rows, std::int64_t cols) {
  if (cols % 16 != 0) {
    throw Error("hadamard16_rows: " + std::to_string(cols) +
                " columns (expected a multiple of 16)");
  }
  const std::int64_t groups = product_or_throw(rows, cols / 16, "hadamard16_rows size");
  for (std::int64_t g = 0; g < groups; ++g) {
    float* v = x + g * 16;
    for (int i = 0; i < 16; ++i) v[i] *= static_cast<float>(kNvfp4HadamardSigns[i]);
    for (int h = 1; h < 16; h *= 2) {
      for (int i = 0; i < 16; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          const float a = v[j], b = v[j + h];
          v[j] = a + b;
          v[j + h] = a - b;
        }
      }
    }
    for (int i = 0; i < 16; ++i) v[i] *= 0.25f;
  }
}

namespace {

// One butterfly stage within each 8-lane half: lanes j with (j & h) == 0 become v[j] +
// v[j + h], the others v[j - h] - v[j] (p: the lanes swapped by distance h; a + b is b + a).
inline __m256 butterfly(__m256 v, __m256 p, __m256 upper) {
  return _mm256_blendv_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), upper);
}

}  // namespace

void hadamard16_rows(float* x, std::int64_t rows, std::int64_t cols) {
  if (cols % 16 != 0) {
    throw Error("hadamard16_rows: " + std::to_string(cols) +
                " columns (expected a multiple of 16)");
  }
  const std::int64_t groups = product_or_throw(rows, cols / 16, "hadamard16_rows size");
  // The scalar butterfly's operations lane by lane, in its order (signs, h = 1, 2, 4, 8, then
  // 1/4): the same float32 results, a group of 16 in two 8-lane registers.
  alignas(32) float signs[16];
  for (int i = 0; i < 16; ++i) signs[i] = static_cast<float>(kNvfp4HadamardSigns[i]);
  const __m256 s_lo = _mm256_load_ps(signs), s_hi = _mm256_load_ps(signs + 8);
  const auto upper = [](int h) {  // lanes whose index has bit h
    alignas(32) float m[8];
    for (int j = 0; j < 8; ++j) m[j] = (j & h) != 0 ? -0.0f : 0.0f;  // sign bit: blendv's mask
    return _mm256_load_ps(m);
  };
  const __m256 u1 = upper(1), u2 = upper(2), u4 = upper(4), quarter = _mm256_set1_ps(0.25f);
  const auto half = [&](__m256 v) {
    v = butterfly(v, _mm256_permute_ps(v, 0xb1), u1);             // (1, 0, 3, 2)
    v = butterfly(v, _mm256_permute_ps(v, 0x4e), u2);             // (2, 3, 0, 1)
    return butterfly(v, _mm256_permute2f128_ps(v, v, 0x01), u4);  // the 128-bit halves
  };
  for (std::int64_t g = 0; g < groups; ++g) {
    float* v = x + g * 16;
    const __m256 lo = half(_mm256_mul_ps(_mm256_loadu_ps(v), s_lo));
    const __m256 hi = half(_mm256_mul_ps(_mm256_loadu_ps(v + 8), s_hi));
    _mm256_storeu_ps(v, _mm256_mul_ps(_mm256_add_ps(lo, hi), quarter));
    _mm256_storeu_ps(v + 8, _mm256_mul_ps(_mm256_sub_ps(lo, hi), quarter));
  }
}

}  // namespace mantissa::numerics
