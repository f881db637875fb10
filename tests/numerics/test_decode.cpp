// Every bit pattern of every 16- and 8-bit format decodes to the exact reference value.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;

class DecodeAll : public ::testing::TestWithParam<FormatCase> {};

TEST_P(DecodeAll, EveryPatternMatchesExactReference) {
  const FormatCase& c = GetParam();
  const numerics::Layout& l = numerics::layout(c.format);
  const std::uint32_t patterns = 1u << (c.ref.exponent_bits + c.ref.mantissa_bits + 1);
  for (std::uint32_t b = 0; b < patterns; ++b) {
    const double expected = ref_decode(b, c.ref);
    const float got = numerics::decode(b, l);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
      const auto u = std::bit_cast<std::uint32_t>(got);
      EXPECT_EQ(u >> 31, b >> (c.ref.exponent_bits + c.ref.mantissa_bits)) << "NaN sign " << b;
      EXPECT_NE(u & 0x00400000u, 0u) << "decoded NaN is quiet " << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), expected) << std::hex << "pattern 0x" << b;
      ASSERT_EQ(std::signbit(got), std::signbit(expected)) << std::hex << b;
    }
  }
}

TEST_P(DecodeAll, BulkPathsMatchScalarOnEveryPattern) {
  const FormatCase& c = GetParam();
  const std::uint32_t patterns = 1u << (c.ref.exponent_bits + c.ref.mantissa_bits + 1);
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(patterns) * c.storage_bytes + 7);
  for (std::uint32_t b = 0; b < patterns; ++b) {
    if (c.storage_bytes == 1) {
      packed[b] = static_cast<std::uint8_t>(b);
    } else {
      reinterpret_cast<std::uint16_t*>(packed.data())[b] = static_cast<std::uint16_t>(b);
    }
  }
  std::vector<float> scalar(patterns), fast(patterns);
  numerics::decode_array_ref(packed.data(), patterns, c.format, scalar.data());
  for (numerics::SimdPath p :
       {numerics::SimdPath::scalar, numerics::SimdPath::avx2, numerics::SimdPath::avx512}) {
    if (!numerics::cpu_supports(p)) continue;
    numerics::set_simd_path(p);
    // Odd offsets and lengths exercise the vector tails.
    for (std::uint32_t start : {0u, 1u, 7u}) {
      std::fill(fast.begin(), fast.end(), -1.0f);
      const std::size_t n = patterns - start - (start == 7 ? 3 : 0);
      numerics::decode_array(packed.data() + start * c.storage_bytes, n, c.format,
                             fast.data() + start);
      for (std::size_t i = start; i < start + n; ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(fast[i]), std::bit_cast<std::uint32_t>(scalar[i]))
            << numerics::simd_path_name(p) << " pattern " << i;
      }
    }
  }
  numerics::set_simd_path(numerics::best_simd_path());
}

INSTANTIATE_TEST_SUITE_P(Formats, DecodeAll, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

}  // namespace
}  // namespace mantissa::testing
