// The vectorized bulk paths give the scalar codec's bits, on random and special inputs, in
// every rounding and overflow mode; the scalar fallback is exercised too.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "convert_kernels.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::ConvertOptions;
using numerics::Overflow;
using numerics::Rounding;
using numerics::SimdPath;

// Random patterns, values around each format's range, and every special value.
std::vector<float> mixed_inputs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v;
  v.reserve(n + 64);
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f,
                  -0.0f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(),
                  65504.0f,
                  65520.0f,
                  448.0f,
                  464.0f,
                  480.0f,
                  57344.0f,
                  61440.0f,
                  4290772992.0f,
                  4292870144.0f,
                  std::ldexp(1.0f, -25),
                  std::ldexp(1.0f, -134),
                  std::ldexp(1.0f, -40),
                  std::ldexp(1.0f, -10),
                  std::ldexp(1.0f, -17),
                  std::bit_cast<float>(0x7fc00000u),
                  std::bit_cast<float>(0x7f800001u),
                  std::bit_cast<float>(0xffffffffu),
                  std::bit_cast<float>(0x7f7f8000u)}) {
    v.push_back(s);
    v.push_back(-s);
  }
  std::uniform_int_distribution<int> exp_dist(60, 170);
  while (v.size() < n) {
    std::uint32_t u = rng();
    if (v.size() % 2 == 0)
      u = (u & 0x807fffffu) | (static_cast<std::uint32_t>(exp_dist(rng)) << 23);
    v.push_back(std::bit_cast<float>(u));
  }
  return v;
}

struct PathGuard {
  ~PathGuard() { numerics::set_simd_path(numerics::best_simd_path()); }
};

class BulkConvert : public ::testing::TestWithParam<FormatCase> {};

TEST_P(BulkConvert, EncodeEveryPathMatchesScalarCodec) {
  const FormatCase& c = GetParam();
  PathGuard guard;
  const std::vector<float> in = mixed_inputs(100'003, 11);
  const std::size_t bytes = in.size() * c.storage_bytes;
  std::vector<std::uint8_t> want(bytes + 16), got(bytes + 16);
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
    for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
      ConvertOptions opt;
      opt.rounding = r;
      opt.overflow = o;
      opt.seed = 0x1234567890abcdefull;
      opt.counter = 0xfffff000ull;  // the stream's counter crosses 2^32 inside the array
      // The reference: the codec itself, one element at a time.
      const numerics::Layout& l = numerics::layout(c.format);
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint32_t rnd = numerics::stochastic_bits(opt.seed, opt.counter + i);
        const std::uint32_t b = numerics::encode(in[i], l, r, o, rnd);
        std::memcpy(want.data() + i * c.storage_bytes, &b, c.storage_bytes);
      }
      for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
        if (!numerics::cpu_supports(p)) continue;
        numerics::set_simd_path(p);
        for (std::size_t start : {std::size_t{0}, std::size_t{5}, std::size_t{37}}) {
          for (const numerics::Stores stores :
               {numerics::Stores::cached, numerics::Stores::streaming}) {
            std::fill(got.begin(), got.end(), 0xa5);
            ConvertOptions shifted = opt;
            shifted.counter += start;
            shifted.stores = stores;
            numerics::encode_array(in.data() + start, in.size() - start - start, c.format,
                                   got.data() + start * c.storage_bytes, shifted);
            const std::size_t first = start * c.storage_bytes;
            const std::size_t last = bytes - start * c.storage_bytes;
            for (std::size_t b = first; b < last; ++b) {
              ASSERT_EQ(got[b], want[b])
                  << numerics::simd_path_name(p) << " " << numerics::rounding_name(r)
                  << " saturate=" << (o == Overflow::saturate) << " element " << b / c.storage_bytes
                  << " input " << in[b / c.storage_bytes];
            }
            // Nothing written outside the range.
            for (std::size_t b = last; b < got.size(); ++b) ASSERT_EQ(got[b], 0xa5) << b;
            for (std::size_t b = 0; b < first; ++b) ASSERT_EQ(got[b], 0xa5) << b;
          }
        }
      }
    }
  }
}

// bfloat16's encode on AVX-512 rounds nearest even by integer arithmetic or, where the CPU
// has AVX512-BF16, by its conversion instruction (which flushes subnormals: those vectors
// take the integers). encode_array takes the instruction where it can, so each way is run
// here directly against the codec.
TEST(BulkConvertBfloat16, BothWaysOfRoundingOnAvx512AreTheCodec) {
  if (!numerics::cpu_supports(SimdPath::avx512)) {
    GTEST_SKIP() << "skip: no AVX-512F/BW here, the avx512 bfloat16 encode is not run";
  }
  const std::vector<float> in = mixed_inputs(100'003, 12);
  const numerics::Layout& l = numerics::layout(numerics::Format::bfloat16);
  std::vector<std::uint16_t> want(in.size()), got(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    want[i] = static_cast<std::uint16_t>(
        numerics::encode(in[i], l, Rounding::nearest_even, Overflow::to_infinity, 0));
  }
  for (const bool unit : {false, true}) {
    if (unit && !numerics::cpu_features().avx512_bf16) {
      std::printf("skip: no AVX512-BF16 conversion instruction on this CPU\n");
      continue;
    }
    for (const bool streaming : {false, true}) {
      std::fill(got.begin(), got.end(), std::uint16_t{0xa5a5});
      numerics::detail::encode_bfloat16_avx512(in.data(), in.size(), got.data(),
                                               Rounding::nearest_even, streaming, unit);
      for (std::size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << (unit ? "instruction" : "integers") << " streaming "
                                   << streaming << " element " << i << " input " << in[i];
      }
    }
  }
}

TEST_P(BulkConvert, DecodeOfEncodedArraysMatchesScalarOnEveryPath) {
  const FormatCase& c = GetParam();
  PathGuard guard;
  const std::vector<float> in = mixed_inputs(10'001, 12);
  std::vector<std::uint8_t> packed(in.size() * c.storage_bytes);
  numerics::encode_array_ref(in.data(), in.size(), c.format, packed.data());
  std::vector<float> want(in.size());
  numerics::decode_array_ref(packed.data(), in.size(), c.format, want.data());
  // Streaming stores start at the destination's first 64-byte boundary: destinations 0 to 17
  // floats past one, so the head, the streamed lines and the tail all vary; a guard element
  // on each side.
  std::vector<float> room(in.size() + 64);
  const std::size_t base = 16 + (64 - reinterpret_cast<std::uintptr_t>(room.data()) % 64) % 64 / 4;
  for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
    if (!numerics::cpu_supports(p)) continue;
    numerics::set_simd_path(p);
    for (const numerics::Stores stores : {numerics::Stores::cached, numerics::Stores::streaming}) {
      for (const std::size_t shift : {std::size_t{0}, std::size_t{1}, std::size_t{17}}) {
        float* got = room.data() + base + shift;
        std::fill(room.begin(), room.end(), -1.0f);
        numerics::decode_array(packed.data(), in.size(), c.format, got, stores);
        ASSERT_EQ(std::memcmp(got, want.data(), in.size() * sizeof(float)), 0)
            << numerics::simd_path_name(p)
            << (stores == numerics::Stores::streaming ? " streaming" : "") << " shift " << shift;
        ASSERT_EQ(got[-1], -1.0f);
        ASSERT_EQ(got[in.size()], -1.0f);
      }
    }
  }
}

TEST_P(BulkConvert, DecodeKeepsSignedZerosAmongNormalNumbers) {
  // Groups of normal numbers with +0 and -0 among them (the vector decoders' fast path), against
  // the scalar codec.
  const FormatCase& c = GetParam();
  PathGuard guard;
  std::vector<float> in(4'099);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float magnitude = 1.0f + static_cast<float>(i % 13) / 8.0f;
    in[i] = i % 5 == 0 ? 0.0f : i % 7 == 0 ? -0.0f : (i % 2 ? magnitude : -magnitude);
  }
  std::vector<std::uint8_t> packed(in.size() * c.storage_bytes);
  numerics::encode_array_ref(in.data(), in.size(), c.format, packed.data());
  std::vector<float> want(in.size()), got(in.size());
  numerics::decode_array_ref(packed.data(), in.size(), c.format, want.data());
  ASSERT_TRUE(std::signbit(want[7]) && want[7] == 0.0f);  // -0 survives the round trip
  for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
    if (!numerics::cpu_supports(p)) continue;
    numerics::set_simd_path(p);
    numerics::decode_array(packed.data(), in.size(), c.format, got.data());
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
          << numerics::simd_path_name(p) << " element " << i;
    }
  }
}

TEST_P(BulkConvert, RoundToFormatEqualsDecodeOfEncode) {
  const FormatCase& c = GetParam();
  std::vector<float> x = mixed_inputs(9'000, 13);
  std::vector<float> want(x.size());
  const numerics::Layout& l = numerics::layout(c.format);
  const Overflow o = numerics::traits(c.format).default_overflow;
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] = numerics::decode(numerics::encode(x[i], l, Rounding::nearest_even, o), l);
  }
  numerics::round_to_format(x.data(), x.size(), c.format);
  ASSERT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0);
}

// round_to_format of x in both overflow modes, bit for bit the exact reference's encode and
// decode (any NaN where the reference gives a NaN).
void expect_rounding_as_the_reference(const FormatCase& c, const std::vector<float>& x) {
  const RefEncoder ref(c.ref);
  for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
    std::vector<float> got = x;
    ConvertOptions opt;
    opt.overflow = o;
    numerics::round_to_format(got.data(), got.size(), c.format, opt);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint32_t b =
          ref.encode(x[i], RefRounding::nearest_even, o == Overflow::saturate, 0);
      const auto want = static_cast<float>(ref_decode(b, c.ref));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i])) << case_name(c.format) << " element " << i;
        continue;
      }
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want))
          << case_name(c.format) << " x = " << x[i] << " (element " << i << ")";
    }
  }
}

// round_to_format rounds groups of 8 in-range lanes in float32 bits. Whole groups of ties,
// near-ties, values at max, at the smallest normal and just below it (the group then takes
// the scalar path), against the independent exact reference, in both overflow modes.
TEST_P(BulkConvert, RoundToFormatInRangeGroupsMatchTheExactReference) {
  const FormatCase& c = GetParam();
  const numerics::FormatTraits& t = numerics::traits(c.format);
  const int drop = 23 - c.ref.mantissa_bits;
  const float lo = static_cast<float>(t.min_normal), hi = static_cast<float>(t.max);
  std::mt19937 rng(31);
  std::vector<float> x;
  for (int g = 0; g < 4000; ++g) {
    const int kind = g % 5;
    for (int lane = 0; lane < 8; ++lane) {
      // A random normal value of the format, then moved to a tie, next to a tie, or an edge.
      const float e = std::uniform_real_distribution<float>(std::log2(lo), std::log2(hi))(rng);
      auto bits = std::bit_cast<std::uint32_t>(std::exp2(e)) & ~((1u << drop) - 1u);
      if (kind == 0) bits |= 1u << (drop - 1);         // exactly half an ulp: a tie
      if (kind == 1) bits |= (1u << (drop - 1)) - 1u;  // just below the tie
      if (kind == 2) bits |= (1u << (drop - 1)) + 1u;  // just above the tie
      float v = std::bit_cast<float>(bits);
      if (kind == 3) v = lane % 2 ? hi : lo;                        // the edges of the fast path
      if (kind == 4) v = lane == 5 ? std::nextafter(lo, 0.0f) : v;  // one lane leaves it
      x.push_back(std::min(v, hi) * (rng() % 2 ? 1.0f : -1.0f));
    }
  }
  expect_rounding_as_the_reference(c, x);
}

// Groups out of the fast path's range (round_to_format's vector codec): subnormal results on
// the format's grid (ties, next to ties, below half the smallest step, just below the smallest
// normal), zeros of both signs, overflow, infinities and NaN, against the exact reference in
// both overflow modes.
TEST_P(BulkConvert, RoundToFormatOutOfRangeGroupsMatchTheExactReference) {
  const FormatCase& c = GetParam();
  const numerics::FormatTraits& t = numerics::traits(c.format);
  const float lo = static_cast<float>(t.min_normal), hi = static_cast<float>(t.max);
  const float step = std::ldexp(lo, -c.ref.mantissa_bits);  // the subnormal grid
  std::mt19937 rng(47);
  std::vector<float> x;
  for (int g = 0; g < 4000; ++g) {
    const int kind = g % 6;
    for (int lane = 0; lane < 8; ++lane) {
      const int k = static_cast<int>(rng() % (1u << c.ref.mantissa_bits));
      float v = std::uniform_real_distribution<float>(0.0f, lo)(rng);
      if (kind == 0) v = (static_cast<float>(k) + 0.5f) * step;  // a tie on the grid
      if (kind == 1) v = std::nextafter((static_cast<float>(k) + 0.5f) * step, 0.0f);
      if (kind == 2) v = std::nextafter((static_cast<float>(k) + 0.5f) * step, lo);
      if (kind == 3) v = lane % 2 ? std::nextafter(lo, 0.0f) : step * 0.25f;
      if (kind == 4) v = lane % 3 == 0 ? 0.0f : v;
      if (kind == 5) {
        const float specials[] = {std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  hi * 1.5f,
                                  hi,
                                  std::nextafter(hi, 0.0f),
                                  1e38f,
                                  lo,
                                  step};
        v = specials[lane];
      }
      x.push_back(rng() % 2 ? v : -v);
    }
  }
  expect_rounding_as_the_reference(c, x);
}

// Short rows, as the attention rounds its probabilities a row at a time: every length from 1
// to 19 (the last values a zero-padded group of their own), from windows of normal values,
// subnormal results, zeros, overflow, infinities and NaN, against the exact reference in both
// overflow modes; nothing written past the end.
TEST_P(BulkConvert, RoundToFormatShortRowsMatchTheExactReference) {
  const FormatCase& c = GetParam();
  const RefEncoder ref(c.ref);
  const numerics::FormatTraits& t = numerics::traits(c.format);
  const float lo = static_cast<float>(t.min_normal), hi = static_cast<float>(t.max);
  std::mt19937 rng(53);
  std::vector<float> x(400);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float u = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
    const float values[] = {u * lo,
                            u * hi,
                            0.0f,
                            hi * 1.5f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            u,
                            std::ldexp(u, -150)};
    const float v = values[rng() % 8];
    x[i] = rng() % 2 ? v : -v;
  }
  for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
    ConvertOptions opt;
    opt.overflow = o;
    for (std::size_t n = 1; n < 20; ++n) {
      for (std::size_t from = 0; from + n + 4 <= x.size(); from += 23) {
        std::vector<float> got(x.begin() + static_cast<std::ptrdiff_t>(from),
                               x.begin() + static_cast<std::ptrdiff_t>(from + n));
        got.resize(n + 4, -7.0f);
        numerics::round_to_format(got.data(), n, c.format, opt);
        for (std::size_t i = 0; i < n; ++i) {
          const auto want = static_cast<float>(ref_decode(
              ref.encode(x[from + i], RefRounding::nearest_even, o == Overflow::saturate, 0),
              c.ref));
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got[i])) << case_name(c.format) << " n " << n;
            continue;
          }
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want))
              << case_name(c.format) << " x = " << x[from + i] << " n " << n << " element " << i;
        }
        for (std::size_t i = n; i < got.size(); ++i) ASSERT_EQ(got[i], -7.0f);
      }
    }
  }
}

TEST_P(BulkConvert, ShortArraysAndTheirLastElementsMatchTheCodecOnEveryPath) {
  // Every length from 0 to 70 (the vector paths' tails under lane masks), from windows of the
  // specials at the start of the inputs; nothing written past the end.
  const FormatCase& c = GetParam();
  PathGuard guard;
  const std::vector<float> in = mixed_inputs(200, 3);
  const numerics::Layout& l = numerics::layout(c.format);
  for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
    if (!numerics::cpu_supports(p)) continue;
    numerics::set_simd_path(p);
    for (std::size_t n = 0; n <= 70; ++n) {
      for (const std::size_t from : {std::size_t{0}, std::size_t{37}, std::size_t{101}}) {
        for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero}) {
          ConvertOptions opt;
          opt.rounding = r;
          std::vector<std::uint8_t> got((n + 4) * c.storage_bytes, 0xa5);
          numerics::encode_array(in.data() + from, n, c.format, got.data(), opt);
          std::vector<float> back(n + 4, -7.0f), want_back(n);
          for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t want = numerics::encode(
                in[from + i], l, r, numerics::traits(c.format).default_overflow, 0);
            std::uint32_t b = 0;
            std::memcpy(&b, got.data() + i * c.storage_bytes, c.storage_bytes);
            ASSERT_EQ(b, want) << numerics::simd_path_name(p) << " n " << n << " element " << i;
            want_back[i] = numerics::decode(want, l);
          }
          for (std::size_t b = n * c.storage_bytes; b < got.size(); ++b) ASSERT_EQ(got[b], 0xa5);
          numerics::decode_array(got.data(), n, c.format, back.data());
          for (std::size_t i = 0; i < n; ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(back[i]),
                      std::bit_cast<std::uint32_t>(want_back[i]))
                << numerics::simd_path_name(p) << " n " << n << " element " << i;
          }
          for (std::size_t i = n; i < back.size(); ++i) ASSERT_EQ(back[i], -7.0f);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, BulkConvert, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

TEST(SimdPath, ScalarIsAlwaysAvailableAndBestIsSupported) {
  EXPECT_TRUE(numerics::cpu_supports(SimdPath::scalar));
  EXPECT_TRUE(numerics::cpu_supports(numerics::best_simd_path()));
  EXPECT_EQ(numerics::active_simd_path(), numerics::best_simd_path());
}

TEST(SimdPath, Avx512RunsWhereTheCpuHasIt) {
  // The tests above run every path this CPU supports; say so where avx512 is not one.
  if (!numerics::cpu_supports(SimdPath::avx512)) {
    GTEST_SKIP() << "skip: no AVX-512F/BW here, the avx512 conversion path is not run (it has: "
                 << numerics::describe(numerics::cpu_features()) << ")";
  }
  EXPECT_EQ(numerics::best_simd_path(), SimdPath::avx512);
  EXPECT_EQ(numerics::simd_path_name(SimdPath::avx512), "avx512");
}

TEST(ConvertArray, Fp8CodesToBfloat16AreTheCodecsOnEveryPath) {
  // Every code of each fp8 format (at each offset of a 64-byte line, and tails of every
  // length to 37) against the scalar codec's decode of the code, encoded as bfloat16; with the
  // hand-derived bits of some codes: e4m3 0x01 = 2^-9, 0x7e = 448, 0xfe = -448; e5m2 0x01 =
  // 2^-16, 0x7b = 57344, 0x7c = inf; the NaN codes give NaN bits.
  PathGuard guard;
  for (numerics::Format f : {numerics::Format::float8_e4m3, numerics::Format::float8_e5m2}) {
    std::vector<std::uint8_t> codes;
    for (int rep = 0; rep < 3; ++rep) {
      for (int c = 0; c < 256; ++c) codes.push_back(static_cast<std::uint8_t>(c * 7 + rep));
    }
    std::vector<float> decoded(codes.size());
    numerics::decode_array_ref(codes.data(), codes.size(), f, decoded.data());
    std::vector<std::uint16_t> want(codes.size());
    numerics::encode_array_ref(decoded.data(), decoded.size(), numerics::Format::bfloat16,
                               want.data());
    for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
      if (!numerics::cpu_supports(p)) continue;
      numerics::set_simd_path(p);
      for (std::size_t length : {codes.size(), std::size_t{37}, std::size_t{31}, std::size_t{1}}) {
        for (std::size_t at : {std::size_t{0}, std::size_t{5}}) {
          const std::size_t n = std::min(length, codes.size() - at);
          std::vector<std::uint16_t> got(n + 1, 0xABCD);
          numerics::convert_array(codes.data() + at, f, n, got.data(), numerics::Format::bfloat16);
          for (std::size_t i = 0; i < n; ++i) {
            ASSERT_EQ(got[i], want[at + i]) << numerics::name(f) << " code " << int(codes[at + i])
                                            << " on " << numerics::simd_path_name(p);
          }
          ASSERT_EQ(got[n], 0xABCD) << "wrote past the end, " << numerics::simd_path_name(p);
        }
      }
    }
  }
  const auto one = [](numerics::Format f, std::uint8_t code) {
    std::uint16_t out = 0;
    numerics::convert_array(&code, f, 1, &out, numerics::Format::bfloat16);
    return out;
  };
  using numerics::Format;
  EXPECT_EQ(one(Format::float8_e4m3, 0x01), 0x3B00);  // 2^-9: exponent 118, mantissa 0
  EXPECT_EQ(one(Format::float8_e4m3, 0x7e), 0x43E0);  // 448 = 1.75 * 2^8
  EXPECT_EQ(one(Format::float8_e4m3, 0xfe), 0xC3E0);
  EXPECT_EQ(one(Format::float8_e5m2, 0x01), 0x3780);  // 2^-16
  EXPECT_EQ(one(Format::float8_e5m2, 0x7b), 0x4760);  // 57344 = 1.75 * 2^15
  EXPECT_EQ(one(Format::float8_e5m2, 0x7c), 0x7F80);  // inf
  EXPECT_TRUE((one(Format::float8_e4m3, 0x7f) & 0x7FFF) > 0x7F80);
  EXPECT_TRUE((one(Format::float8_e5m2, 0xff) & 0x7FFF) > 0x7F80);
}

TEST(ConvertArray, HalfCodesToBfloat16AreTheCodecsOnEveryPath) {
  // Every float16 and cbfloat16 code (POL 2 rounds them to bfloat16 for bf16 products), at
  // an odd offset and in tails of every length to 40, against the scalar codec's decode
  // encoded as bfloat16 (nearest even); and hand-derived bits below.
  PathGuard guard;
  using numerics::Format;
  for (Format f : {Format::float16, Format::cbfloat16}) {
    std::vector<std::uint16_t> codes(65536 + 40);
    for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint16_t>(c);
    std::vector<float> decoded(codes.size());
    numerics::decode_array_ref(codes.data(), codes.size(), f, decoded.data());
    std::vector<std::uint16_t> want(codes.size());
    numerics::encode_array_ref(decoded.data(), decoded.size(), Format::bfloat16, want.data());
    for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
      if (!numerics::cpu_supports(p)) {
        std::printf("skip: %s to bfloat16 on the %s path: this CPU lacks it\n",
                    std::string(numerics::name(f)).c_str(),
                    std::string(numerics::simd_path_name(p)).c_str());
        continue;
      }
      numerics::set_simd_path(p);
      const auto check = [&](std::size_t at, std::size_t n) {
        std::vector<std::uint16_t> got(n + 1, 0xABCD);
        numerics::convert_array(codes.data() + at, f, n, got.data(), Format::bfloat16);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], want[at + i]) << numerics::name(f) << " code " << codes[at + i]
                                          << " on " << numerics::simd_path_name(p);
        }
        ASSERT_EQ(got[n], 0xABCD) << "wrote past the end, " << numerics::simd_path_name(p);
      };
      check(0, 65536);
      check(3, 65536);
      for (std::size_t n = 0; n <= 40; ++n) check(0x7BF0 - n / 2, n);  // across the top
    }
  }
  const auto one = [](Format f, std::uint16_t code) {
    std::uint16_t out = 0;
    numerics::convert_array(&code, f, 1, &out, Format::bfloat16);
    return out;
  };
  EXPECT_EQ(one(Format::float16, 0x3C00), 0x3F80);  // 1
  EXPECT_EQ(one(Format::float16, 0x3C04), 0x3F80);  // 1 + 2^-8: the tie, to even (1)
  EXPECT_EQ(one(Format::float16, 0x3C0C), 0x3F82);  // 1 + 3 * 2^-8: the tie, to 1 + 2^-6
  EXPECT_EQ(one(Format::float16, 0x3C05), 0x3F81);  // 1 + 5 * 2^-10: above the tie
  EXPECT_EQ(one(Format::float16, 0x0001), 0x3380);  // 2^-24, a float16 subnormal
  EXPECT_EQ(one(Format::float16, 0xFC00), 0xFF80);  // -inf
  EXPECT_TRUE((one(Format::float16, 0x7E00) & 0x7FFF) > 0x7F80);
  EXPECT_EQ(one(Format::cbfloat16, 0x3E00), 0x3F80);  // 1: exponent field 31, bias 31
  EXPECT_EQ(one(Format::cbfloat16, 0x0001), 0x2C00);  // 2^-39, the smallest subnormal
  EXPECT_EQ(one(Format::cbfloat16, 0xBE01), 0xBF80);  // -(1 + 2^-9): rounds to -1
}

TEST(SimdPath, Float32IsACopy) {
  const std::vector<float> in = mixed_inputs(1000, 3);
  std::vector<float> out(in.size());
  numerics::encode_array(in.data(), in.size(), numerics::Format::float32, out.data());
  EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace mantissa::testing
