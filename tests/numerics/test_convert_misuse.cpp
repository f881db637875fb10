// The conversion API under mistaken use (the library audit of 2026-11-28, docs/reliability.md):
// a Format, Rounding or Overflow cast from an integer outside its enum, and fp6 / fp4 codes
// with bits above their width, throw mantissa::Error naming the value instead of reading past
// the format table or masking the bits away.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/fp4_packing.hpp"

namespace mantissa::numerics {
namespace {

using testing::error_of;

const Format kNotAFormat = static_cast<Format>(200);

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ConvertMisuse, AFormatOutsideTheEnumIsRefusedEverywhere) {
  std::vector<float> x(8, 1.0f);
  std::vector<std::uint8_t> bytes(32, 0);
  const std::string expected = "numerics::Format 200 is not a format (expected 0..9: float32";
  EXPECT_TRUE(contains(error_of([&] { (void)traits(kNotAFormat); }), expected));
  EXPECT_TRUE(contains(error_of([&] { (void)name(kNotAFormat); }), expected));
  EXPECT_TRUE(
      contains(error_of([&] { encode_array(x.data(), 8, kNotAFormat, bytes.data()); }), expected));
  EXPECT_TRUE(contains(error_of([&] { encode_array_ref(x.data(), 8, kNotAFormat, bytes.data()); }),
                       expected));
  EXPECT_TRUE(
      contains(error_of([&] { decode_array(bytes.data(), 8, kNotAFormat, x.data()); }), expected));
  EXPECT_TRUE(contains(error_of([&] { decode_array_ref(bytes.data(), 8, kNotAFormat, x.data()); }),
                       expected));
  EXPECT_TRUE(contains(error_of([&] { round_to_format(x.data(), 8, kNotAFormat); }), expected));
  EXPECT_TRUE(contains(
      error_of([&] { convert_array(bytes.data(), kNotAFormat, 8, bytes.data(), Format::float16); }),
      expected));
  EXPECT_TRUE(contains(
      error_of([&] { convert_array(bytes.data(), Format::float16, 8, bytes.data(), kNotAFormat); }),
      expected));
  EXPECT_EQ(x, std::vector<float>(8, 1.0f));  // nothing written
}

TEST(ConvertMisuse, ARoundingOrOverflowOutsideItsEnumIsRefused) {
  std::vector<float> x(8, 1.5f);
  std::vector<std::uint16_t> bits(8, 0x1234);
  ConvertOptions bad_rounding;
  bad_rounding.rounding = static_cast<Rounding>(7);
  ConvertOptions bad_overflow;
  bad_overflow.overflow = static_cast<Overflow>(9);
  for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
    if (!cpu_supports(p)) continue;
    set_simd_path(p);
    for (Format f : {Format::bfloat16, Format::float16, Format::float8_e4m3}) {
      EXPECT_EQ(error_of([&] { encode_array(x.data(), 8, f, bits.data(), bad_rounding); }),
                "encode_array: rounding 7 is not a rounding mode (expected nearest_even, "
                "toward_zero or stochastic)")
          << simd_path_name(p);
      EXPECT_EQ(error_of([&] { encode_array(x.data(), 8, f, bits.data(), bad_overflow); }),
                "encode_array: overflow 9 is not an overflow rule (expected to_infinity or "
                "saturate)")
          << simd_path_name(p);
      EXPECT_EQ(error_of([&] { round_to_format(x.data(), 8, f, bad_rounding); }),
                "round_to_format: rounding 7 is not a rounding mode (expected nearest_even, "
                "toward_zero or stochastic)")
          << simd_path_name(p);
    }
  }
  set_simd_path(best_simd_path());
  EXPECT_EQ(x, std::vector<float>(8, 1.5f));
  EXPECT_EQ(bits, std::vector<std::uint16_t>(8, 0x1234));
}

// 0x40 is float6_e2m3's pattern 0 with bit 6 set; masked, it decoded as 0.0.
TEST(ConvertMisuse, CodesWiderThanTheirFormatAreRefusedNotMasked) {
  struct Case {
    Format format;
    std::uint8_t bad;
    const char* message;
  };
  const Case cases[] = {
      {Format::float6_e2m3, 0x40,
       "decode_array: code 64 at index 37 does not fit float6_e2m3 (6 bits: expected 0..63)"},
      {Format::float6_e3m2, 0x80,
       "decode_array: code 128 at index 37 does not fit float6_e3m2 (6 bits: expected 0..63)"},
      {Format::float4_e2m1, 0x10,
       "decode_array: code 16 at index 37 does not fit float4_e2m1 (4 bits: expected 0..15)"},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> codes(100, 0x01);
    codes[37] = c.bad;
    codes[80] = 0xff;  // a later one: the first is named
    std::vector<float> out(100, -7.0f);
    for (SimdPath p : {SimdPath::scalar, SimdPath::avx2, SimdPath::avx512}) {
      if (!cpu_supports(p)) continue;
      set_simd_path(p);
      EXPECT_EQ(error_of([&] { decode_array(codes.data(), 100, c.format, out.data()); }), c.message)
          << simd_path_name(p);
      EXPECT_EQ(error_of([&] { decode_array_ref(codes.data(), 100, c.format, out.data()); }),
                c.message);
      std::vector<std::uint16_t> bf16(100);
      const std::string via = error_of(
          [&] { convert_array(codes.data(), c.format, 100, bf16.data(), Format::bfloat16); });
      EXPECT_EQ(via.rfind("convert_array: code ", 0), 0u) << via;
      EXPECT_EQ(
          error_of([&] { convert_array(codes.data(), c.format, 100, codes.data(), c.format); }),
          via);
    }
    set_simd_path(best_simd_path());
    EXPECT_EQ(out, std::vector<float>(100, -7.0f)) << "written before the refusal";
  }
}

TEST(ConvertMisuse, CodesThatFitDecodeAndFormatsWithoutSpareBitsAreNotChecked) {
  // Every fp6 / fp4 pattern, and every byte of the 8-bit formats (E8M0 0xff is its NaN).
  std::vector<std::uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  std::vector<float> out(256);
  EXPECT_EQ(error_of([&] { decode_array(all.data(), 64, Format::float6_e2m3, out.data()); }),
            "(no error)");
  EXPECT_EQ(out[31], 7.5f);   // 0.11.111: (1 + 7/8) * 2^(3 - 1)
  EXPECT_EQ(out[63], -7.5f);  // 1.11.111
  EXPECT_EQ(error_of([&] { decode_array(all.data(), 16, Format::float4_e2m1, out.data()); }),
            "(no error)");
  EXPECT_EQ(out[15], -6.0f);  // 1.11.1
  for (Format f : {Format::float8_e4m3, Format::float8_e5m2, Format::float8_e8m0}) {
    EXPECT_EQ(error_of([&] { decode_array(all.data(), 256, f, out.data()); }), "(no error)")
        << name(f);
  }
}

TEST(ConvertMisuse, PackFp4NamesTheCodeThatDoesNotFit) {
  const std::uint8_t codes[3] = {1, 2, 0x1f};
  std::uint8_t packed[2] = {0xaa, 0xaa};
  EXPECT_EQ(error_of([&] { pack_fp4(codes, 3, packed); }),
            "pack_fp4: code 31 at index 2 does not fit float4_e2m1 (4 bits: expected 0..15)");
  EXPECT_EQ(packed[0], 0xaa);
}

}  // namespace
}  // namespace mantissa::numerics
