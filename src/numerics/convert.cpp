#include "mantissa/numerics/convert.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "convert_kernels.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::numerics {
namespace {

void store(void* dst, std::size_t i, int bytes, std::uint32_t bits) {
  if (bytes == 1) {
    static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(bits);
  } else {
    static_cast<std::uint16_t*>(dst)[i] = static_cast<std::uint16_t>(bits);
  }
}

std::uint32_t load(const void* src, std::size_t i, int bytes) {
  return bytes == 1 ? static_cast<const std::uint8_t*>(src)[i]
                    : static_cast<const std::uint16_t*>(src)[i];
}

detail::EncodeArgs make_args(Format format, const ConvertOptions& o) {
  const FormatTraits& t = traits(format);
  return detail::EncodeArgs{t.layout,
                            o.rounding,
                            o.overflow.value_or(t.default_overflow),
                            o.seed,
                            static_cast<std::uint32_t>(o.counter >> 32),
                            static_cast<std::uint32_t>(o.counter),
                            t.storage_bytes,
                            o.stores == Stores::streaming};
}

bool scalar_only(Format format) {
  return format == Format::float32 || active_simd_path() == SimdPath::scalar;
}

// Every code of a one-byte format as bfloat16 bits, by the scalar codec: the bits decoding
// the code and encoding that value as bfloat16 (nearest-even) give, so a lookup is that path.
struct ByteTable {
  std::uint16_t bits[256];
  explicit ByteTable(Format from) {
    const Layout in = layout(from), out = layout(Format::bfloat16);
    for (std::uint32_t c = 0; c < 256; ++c) {
      bits[c] = static_cast<std::uint16_t>(
          encode(decode(c, in), out, Rounding::nearest_even, Overflow::to_infinity));
    }
  }
};

// The fp8 tensor formats' tables (every byte a code of theirs), or null.
const std::uint16_t* bf16_table(Format from) {
  static const ByteTable e4m3(Format::float8_e4m3), e5m2(Format::float8_e5m2);
  if (from == Format::float8_e4m3) return e4m3.bits;
  if (from == Format::float8_e5m2) return e5m2.bits;
  return nullptr;
}

// Rounding and overflow values cast from integers outside their enums are refused before a
// kernel dispatches on them.
void check_options(const ConvertOptions& o, const char* who) {
  if (static_cast<int>(o.rounding) > static_cast<int>(Rounding::stochastic)) {
    throw Error(std::string(who) + ": rounding " + std::to_string(static_cast<int>(o.rounding)) +
                " is not a rounding mode (expected nearest_even, toward_zero or stochastic)");
  }
  if (o.overflow && static_cast<int>(*o.overflow) > static_cast<int>(Overflow::saturate)) {
    throw Error(std::string(who) + ": overflow " + std::to_string(static_cast<int>(*o.overflow)) +
                " is not an overflow rule (expected to_infinity or saturate)");
  }
}

// Formats whose codes are narrower than their storage keep it to one byte (fp6, fp4).
constexpr bool narrow_codes_take_a_byte() {
  for (const FormatTraits& t : kFormatTable) {
    if (t.layout.total_bits() < 8 * t.storage_bytes && t.storage_bytes != 1) return false;
  }
  return true;
}
static_assert(narrow_codes_take_a_byte(), "require_codes_fit reads one byte per code");

}  // namespace

void require_codes_fit(const void* codes, std::size_t n, Format format, std::string_view who) {
  const FormatTraits& t = traits(format);
  const int bits = t.layout.total_bits();
  if (bits >= 8 * t.storage_bytes) return;
  const auto* c = static_cast<const std::uint8_t*>(codes);
  const auto top = static_cast<std::uint8_t>((1u << bits) - 1u);
  std::uint8_t all = 0;  // the OR of every code: a loop that vectorizes, the search after
  for (std::size_t i = 0; i < n; ++i) all |= c[i];
  if ((all & ~top) == 0) return;
  for (std::size_t i = 0; i < n; ++i) {
    if ((c[i] & ~top) != 0) {
      throw Error(std::string(who) + ": code " + std::to_string(c[i]) + " at index " +
                  std::to_string(i) + " does not fit " + std::string(t.name) + " (" +
                  std::to_string(bits) + " bits: expected 0.." + std::to_string(top) + ")");
    }
  }
}

void encode_array_ref(const float* src, std::size_t n, Format format, void* dst,
                      const ConvertOptions& options) {
  check_options(options, "encode_array");
  const FormatTraits& t = traits(format);
  if (format == Format::float32) {
    if (n != 0) std::memcpy(dst, src, n * sizeof(float));  // (empty spans may be null)
    return;
  }
  const Overflow overflow = options.overflow.value_or(t.default_overflow);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = options.rounding == Rounding::stochastic
                                ? stochastic_bits(options.seed, options.counter + i)
                                : 0u;
    store(dst, i, t.storage_bytes, encode(src[i], t.layout, options.rounding, overflow, r));
  }
}

void decode_array_ref(const void* src, std::size_t n, Format format, float* dst) {
  const FormatTraits& t = traits(format);
  if (format == Format::float32) {
    if (n != 0) std::memcpy(dst, src, n * sizeof(float));  // (empty spans may be null)
    return;
  }
  require_codes_fit(src, n, format, "decode_array");
  for (std::size_t i = 0; i < n; ++i) dst[i] = decode(load(src, i, t.storage_bytes), t.layout);
}

void encode_array(const float* src, std::size_t n, Format format, void* dst,
                  const ConvertOptions& options) {
  if (scalar_only(format)) {
    encode_array_ref(src, n, format, dst, options);
    return;
  }
  check_options(options, "encode_array");
  detail::EncodeArgs args = make_args(format, options);
  auto* out = static_cast<std::uint8_t*>(dst);
  const bool bf16_wide = format == Format::bfloat16 && active_simd_path() == SimdPath::avx512;
  // The vector kernel keys its random stream on the counter's high half: split the array
  // where the low half wraps.
  while (n > 0) {
    const std::uint64_t room = (std::uint64_t{1} << 32) - args.counter_low;
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, room));
    if (format == Format::float8_e8m0) {  // (no sign, no mantissa: a kernel of its own)
      detail::encode_e8m0_avx2(src, chunk, out, args);
    } else if (bf16_wide && args.rounding != Rounding::stochastic &&
               args.overflow == Overflow::to_infinity) {
      detail::encode_bfloat16_avx512(src, chunk, reinterpret_cast<std::uint16_t*>(out),
                                     args.rounding, options.stores == Stores::streaming,
                                     cpu_features().avx512_bf16);
    } else {
      detail::encode_avx2(src, chunk, out, args);
    }
    src += chunk;
    out += chunk * static_cast<std::size_t>(args.storage_bytes);
    n -= chunk;
    args.counter_low += static_cast<std::uint32_t>(chunk);
    if (args.counter_low == 0) ++args.counter_high;
  }
}

void decode_array(const void* src, std::size_t n, Format format, float* dst, Stores stores) {
  if (scalar_only(format)) {
    decode_array_ref(src, n, format, dst);
    return;
  }
  require_codes_fit(src, n, format, "decode_array");
  if (format == Format::float8_e8m0) {
    detail::decode_e8m0_avx2(static_cast<const std::uint8_t*>(src), n, dst);
    return;
  }
  if (format == Format::bfloat16 && active_simd_path() == SimdPath::avx512) {
    detail::decode_bfloat16_avx512(static_cast<const std::uint16_t*>(src), n, dst,
                                   stores == Stores::streaming);
    return;
  }
  const FormatTraits& t = traits(format);
  detail::decode_avx2(src, n, t.layout, t.storage_bytes, dst, stores == Stores::streaming);
}

void convert_array(const void* src, Format from, std::size_t n, void* dst, Format to) {
  require_codes_fit(src, n, from, "convert_array");
  if (from == to) {
    if (n != 0) std::memcpy(dst, src, n * static_cast<std::size_t>(traits(from).storage_bytes));
    return;
  }
  if (from == Format::float32) {
    encode_array(static_cast<const float*>(src), n, to, dst);
    return;
  }
  if (to == Format::float32) {
    decode_array(src, n, from, static_cast<float*>(dst));
    return;
  }
  if (const std::uint16_t* table = to == Format::bfloat16 ? bf16_table(from) : nullptr;
      table != nullptr && active_simd_path() == SimdPath::avx512) {
    detail::bytes_to_bfloat16_avx512(static_cast<const std::uint8_t*>(src), n, table,
                                     static_cast<std::uint16_t*>(dst));
    return;
  }
  constexpr std::size_t kBlock = 1024;
  alignas(64) float buffer[kBlock];
  const auto* in = static_cast<const std::uint8_t*>(src);
  auto* out = static_cast<std::uint8_t*>(dst);
  const std::size_t in_bytes = static_cast<std::size_t>(traits(from).storage_bytes);
  const std::size_t out_bytes = static_cast<std::size_t>(traits(to).storage_bytes);
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    decode_array(in + i * in_bytes, m, from, buffer);
    encode_array(buffer, m, to, out + i * out_bytes);
  }
}

void round_to_format(float* x, std::size_t n, Format format, const ConvertOptions& options) {
  check_options(options, "round_to_format");
  const FormatTraits& t = traits(format);
  if (format == Format::float32) return;
  const Overflow overflow = options.overflow.value_or(t.default_overflow);
  if (format == Format::bfloat16 && options.rounding == Rounding::nearest_even &&
      overflow == Overflow::to_infinity && active_simd_path() == SimdPath::avx512) {
    detail::round_bfloat16_avx512(x, n);
    return;
  }
  if (format == Format::float16 && options.rounding == Rounding::nearest_even &&
      overflow == Overflow::to_infinity && active_simd_path() != SimdPath::scalar) {
    detail::round_float16_avx2(x, n);
    return;
  }
  if (options.rounding == Rounding::nearest_even && !scalar_only(format) &&
      format != Format::float8_e8m0) {  // (a sign and a mantissa assumed)
    detail::round_nearest_avx2(x, n, t.layout, overflow, static_cast<float>(t.min_normal),
                               static_cast<float>(t.max));
    return;
  }
  constexpr std::size_t kBlock = 4096;
  alignas(64) std::uint16_t buffer[kBlock];
  ConvertOptions o = options;
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    encode_array(x + i, m, format, buffer, o);
    decode_array(buffer, m, format, x + i);
    o.counter += m;
  }
}

}  // namespace mantissa::numerics
