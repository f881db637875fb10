// The fp8 cast (quant/fp8_cast.hpp) on every float32 bit pattern, scale 1, into e4m3 and
// e5m2: the codes and the statistics of each bulk path this CPU has against the scalar twin
// (the codec per element), 2^24 patterns at a time. With scale 1 the scaled value is the
// pattern itself, so every rounding the vector code makes (ties, subnormals, saturation,
// infinities, NaNs) is taken. Long: two formats x 2^32 patterns through the codec.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/quant/fp8_cast.hpp"
#include "simd_paths.hpp"

namespace mantissa::quant {
namespace {

using numerics::Format;

TEST(Fp8CastExhaustive, EveryFloat32PatternMatchesTheTwinOnEveryPath) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 24;
  std::vector<std::uint32_t> x(static_cast<std::size_t>(kChunk));
  std::vector<std::uint8_t> ref(x.size()), fast(x.size());
  for (Format fp8 : {Format::float8_e4m3, Format::float8_e5m2}) {
    for (std::int64_t first = 0; first < (std::int64_t{1} << 32); first += kChunk) {
      for (std::int64_t i = 0; i < kChunk; ++i) x[i] = static_cast<std::uint32_t>(first + i);
      const Fp8CastStats want =
          cast_to_fp8_ref(x.data(), Format::float32, kChunk, 1.0f, fp8, ref.data());
      testing::on_each_simd_path(
          {numerics::SimdPath::avx2, numerics::SimdPath::avx512}, [&](const std::string& path) {
            const Fp8CastStats got =
                cast_to_fp8(x.data(), Format::float32, kChunk, 1.0f, fp8, fast.data());
            const std::string at = std::string(numerics::name(fp8)) + " " + path +
                                   " from pattern " + std::to_string(first);
            for (std::int64_t i = 0; i < kChunk; ++i) {
              ASSERT_EQ(fast[i], ref[i]) << at << " + " << i;
            }
            EXPECT_EQ(std::isnan(got.amax), std::isnan(want.amax)) << at;
            if (!std::isnan(want.amax)) {
              EXPECT_EQ(got.amax, want.amax) << at;
            }
            EXPECT_EQ(got.overflows, want.overflows) << at;
            EXPECT_EQ(got.underflows, want.underflows) << at;
          });
    }
  }
}

}  // namespace
}  // namespace mantissa::quant
