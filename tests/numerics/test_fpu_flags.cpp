// The conversions do not depend on the FPU's flush-to-zero and denormals-are-zero flags
// (docs/numerics.md): with both set, as a program built with -ffast-math runs, every path's
// decode of every bit pattern and its encode and round_to_format of subnormal-rich inputs give
// the independent exact reference's bits, computed before the flags are set.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "fpu_flags.hpp"
#include "mantissa/numerics/convert.hpp"
#include "reference_formats.hpp"
#include "simd_paths.hpp"

namespace mantissa::testing {
namespace {

using numerics::ConvertOptions;
using numerics::Overflow;
using numerics::Rounding;

// Inputs whose conversions meet float32 subnormals: float32 subnormals themselves, the
// format's own subnormals and the values around its smallest normal, zeros, and normal values
// of every size, in groups of 8 of one kind and mixed.
std::vector<float> subnormal_rich_inputs(const numerics::FormatTraits& t, unsigned seed) {
  std::mt19937 rng(seed);
  const float lo = static_cast<float>(t.min_normal);
  std::vector<float> v;
  for (int g = 0; g < 3000; ++g) {
    for (int lane = 0; lane < 8; ++lane) {
      const int kind = (g % 5 == 4) ? static_cast<int>(rng() % 4) : g % 4;
      float x = 0.0f;
      if (kind == 0) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng() & 0x007fffffu));
      if (kind == 1) x = std::uniform_real_distribution<float>(0.0f, lo)(rng);
      if (kind == 2) x = lo * std::uniform_real_distribution<float>(0.5f, 4.0f)(rng);
      if (kind == 3)
        x = std::ldexp(1.0f + static_cast<float>(rng() % 1024) / 1024.0f,
                       static_cast<int>(rng() % 200) - 100);
      if (rng() % 16 == 0) x = 0.0f;
      v.push_back(rng() % 2 ? x : -x);
    }
  }
  return v;
}

bool same(float got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::bit_cast<std::uint32_t>(got) ==
         std::bit_cast<std::uint32_t>(static_cast<float>(want));
}

class UnderFlushFlags : public ::testing::TestWithParam<FormatCase> {};

TEST_P(UnderFlushFlags, DecodeOfEveryPatternIsTheExactValueOnEveryPath) {
  const FormatCase& c = GetParam();
  const std::uint32_t count = 1u << (c.ref.exponent_bits + c.ref.mantissa_bits + 1);
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(count) * c.storage_bytes);
  std::vector<double> want(count);
  for (std::uint32_t b = 0; b < count; ++b) {
    std::memcpy(packed.data() + static_cast<std::size_t>(b) * c.storage_bytes, &b, c.storage_bytes);
    want[b] = ref_decode(b, c.ref);
  }
  on_each_simd_path(kEverySimdPath, [&](const std::string& path) {
    std::vector<float> got(count, -1.0f);
    {
      const FlushSubnormals flags;
      numerics::decode_array(packed.data(), count, c.format, got.data());
    }
    for (std::uint32_t b = 0; b < count; ++b) {
      ASSERT_TRUE(same(got[b], want[b])) << case_name(c.format) << " " << path << " pattern " << b
                                         << ": " << got[b] << " not " << want[b];
    }
  });
}

TEST_P(UnderFlushFlags, EncodeAndRoundToFormatAreTheExactReferenceOnEveryPath) {
  const FormatCase& c = GetParam();
  const numerics::FormatTraits& t = numerics::traits(c.format);
  const std::vector<float> x = subnormal_rich_inputs(t, 71);
  const RefEncoder ref(c.ref);
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero}) {
    for (Overflow o : {Overflow::to_infinity, Overflow::saturate}) {
      ConvertOptions opt;
      opt.rounding = r;
      opt.overflow = o;
      std::vector<std::uint32_t> want_code(x.size());
      std::vector<double> want_value(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        want_code[i] = ref.encode(x[i], to_ref(r), o == Overflow::saturate, 0);
        want_value[i] = ref_decode(want_code[i], c.ref);
      }
      on_each_simd_path(kEverySimdPath, [&](const std::string& path) {
        std::vector<std::uint8_t> code(x.size() * c.storage_bytes);
        std::vector<float> rounded = x;
        {
          const FlushSubnormals flags;
          numerics::encode_array(x.data(), x.size(), c.format, code.data(), opt);
          if (r == Rounding::nearest_even) {
            numerics::round_to_format(rounded.data(), rounded.size(), c.format, opt);
          }
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
          std::uint32_t got = 0;
          std::memcpy(&got, code.data() + i * c.storage_bytes, c.storage_bytes);
          ASSERT_EQ(got, want_code[i]) << case_name(c.format) << " " << path << " "
                                       << numerics::rounding_name(r) << " x = " << x[i];
          if (r == Rounding::nearest_even) {
            ASSERT_TRUE(same(rounded[i], want_value[i]))
                << case_name(c.format) << " " << path << " round_to_format x = " << x[i];
          }
        }
      });
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(FlushSubnormals, TheFlagsFlushWhileSetAndAreRestored) {
  // The guard does what the tests above rely on: a subnormal operand reads as zero inside.
  volatile float tiny = std::numeric_limits<float>::denorm_min();
  const unsigned before = _mm_getcsr();
  {
    const FlushSubnormals flags;
    volatile float doubled = tiny * 2.0f;
    EXPECT_EQ(doubled, 0.0f);
  }
  EXPECT_EQ(_mm_getcsr(), before);
  volatile float doubled = tiny * 2.0f;
  EXPECT_EQ(doubled, 2 * std::numeric_limits<float>::denorm_min());
}

INSTANTIATE_TEST_SUITE_P(Formats, UnderFlushFlags, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

}  // namespace
}  // namespace mantissa::testing
