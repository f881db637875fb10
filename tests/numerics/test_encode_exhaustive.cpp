// Label `long`: every one of the 2^32 float32 patterns, per format and rounding mode, through
// the scalar codec and the active bulk path (and round_to_format), against the exact reference.
// About 30 minutes on 2 cores; run with `ctest --test-dir build -L long`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "block_format_fixtures.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::Overflow;
using numerics::Rounding;

// What a sweep of every float32 pattern found: how many were wrong, and the first reported.
struct Sweep {
  std::uint64_t mismatches = 0;
  std::uint32_t first_bad = 0;
};

// Calls check(start, in, bad) for every chunk of the 2^32 float32 patterns, on all hardware
// threads: `in` holds the chunk's floats (pattern start + i at i), and check calls bad(bits)
// for each pattern it finds wrong.
template <class Check>
Sweep sweep_all_float32(const Check& check) {
  constexpr std::uint64_t kChunk = 1u << 20;
  constexpr std::uint64_t kTotal = std::uint64_t{1} << 32;
  std::atomic<std::uint64_t> next{0}, mismatches{0};
  std::atomic<std::uint32_t> first_bad{0};
  const auto bad = [&](std::uint32_t bits) {
    if (mismatches.fetch_add(1) == 0) first_bad = bits;
  };
  auto worker = [&] {
    std::vector<float> in(kChunk);
    for (std::uint64_t start; (start = next.fetch_add(kChunk)) < kTotal;) {
      for (std::uint64_t i = 0; i < kChunk; ++i) {
        in[i] = std::bit_cast<float>(static_cast<std::uint32_t>(start + i));
      }
      check(start, in, bad);
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return {mismatches.load(), first_bad.load()};
}

class EncodeExhaustive : public ::testing::TestWithParam<FormatRounding> {};

TEST_P(EncodeExhaustive, AllFloat32Inputs) {
  const FormatCase& c = std::get<0>(GetParam());
  const Rounding r = std::get<1>(GetParam());
  const RefEncoder reference(c.ref);
  const numerics::Layout& l = numerics::layout(c.format);
  const Overflow o = numerics::traits(c.format).default_overflow;
  const Sweep sweep =
      sweep_all_float32([&](std::uint64_t start, const std::vector<float>& in, const auto& bad) {
        std::vector<std::uint8_t> bulk(in.size() * c.storage_bytes);
        numerics::ConvertOptions opt;
        opt.rounding = r;
        opt.overflow = o;
        opt.seed = 99;
        opt.counter = start;
        numerics::encode_array(in.data(), in.size(), c.format, bulk.data(), opt);
        for (std::uint64_t i = 0; i < in.size(); ++i) {
          const std::uint32_t random = numerics::stochastic_bits(opt.seed, start + i);
          const std::uint32_t want =
              reference.encode(in[i], to_ref(r), o == Overflow::saturate, random);
          std::uint32_t fast = 0;
          std::memcpy(&fast, bulk.data() + i * c.storage_bytes, c.storage_bytes);
          const std::uint32_t scalar = numerics::encode(in[i], l, r, o, random);
          if (scalar != want || fast != want) bad(static_cast<std::uint32_t>(start + i));
        }
      });
  EXPECT_EQ(sweep.mismatches, 0u) << case_name(c.format) << " first bad input 0x" << std::hex
                                  << sweep.first_bad;
}

INSTANTIATE_TEST_SUITE_P(Formats, EncodeExhaustive, all_formats_and_roundings(),
                         format_rounding_name);

// Every float32 pattern against the ml_dtypes round-to-nearest fixtures (the scalar codec and
// the active bulk path), and E8M0 in every mode against its exact reference.
class BlockFormatExhaustive : public ::testing::TestWithParam<numerics::Format> {};

TEST_P(BlockFormatExhaustive, AllFloat32InputsAgainstMlDtypesAndTheExactReference) {
  const numerics::Format f = GetParam();
  const RunFixture fixture(f);
  const numerics::Layout& l = numerics::layout(f);
  const Overflow o = numerics::traits(f).default_overflow;
  const bool e8m0 = f == numerics::Format::float8_e8m0;
  // fp6 / fp4 without NaN: the exact reference decides NaN inputs (+-max, documented).
  std::optional<RefEncoder> element_ref;
  if (!e8m0) element_ref.emplace(RefFormat{l.exponent_bits, l.mantissa_bits, l.bias, false, false});
  const Sweep sweep =
      sweep_all_float32([&](std::uint64_t start, const std::vector<float>& in, const auto& bad) {
        std::vector<std::uint8_t> bulk(in.size());
        numerics::encode_array(in.data(), in.size(), f, bulk.data());
        std::vector<std::uint8_t> bulk_toward_zero(in.size()), bulk_stochastic(in.size());
        if (e8m0) {
          numerics::ConvertOptions opt;
          opt.overflow = o;
          opt.rounding = Rounding::toward_zero;
          numerics::encode_array(in.data(), in.size(), f, bulk_toward_zero.data(), opt);
          opt.rounding = Rounding::stochastic;
          opt.seed = 3;
          opt.counter = start;  // element i's random bits: stochastic_bits(3, its pattern)
          numerics::encode_array(in.data(), in.size(), f, bulk_stochastic.data(), opt);
        }
        for (std::uint64_t i = 0; i < in.size(); ++i) {
          const auto bits = static_cast<std::uint32_t>(start + i);
          int want = fixture.code(bits);
          // ml_dtypes' one deviation (test_block_formats.cpp): E8M0 of float32 subnormals
          // between 2^-127 and 1.5 * 2^-127; there, and for NaN, the exact reference decides.
          if (want < 0 || (e8m0 && bits > 0x00400000u && bits < 0x00600000u)) {
            want = e8m0 ? static_cast<int>(ref_encode_e8m0(in[i], false, false, false, 0))
                        : static_cast<int>(
                              element_ref->encode(in[i], RefRounding::nearest_even, true, 0));
          }
          const std::uint32_t scalar = numerics::encode(in[i], l, Rounding::nearest_even, o);
          bool wrong = scalar != static_cast<std::uint32_t>(want) || bulk[i] != want;
          if (e8m0) {  // the other modes, the codec and the bulk path
            const std::uint32_t random = numerics::stochastic_bits(3, bits);
            const std::uint32_t toward_zero = ref_encode_e8m0(in[i], true, false, false, 0);
            const std::uint32_t stochastic = ref_encode_e8m0(in[i], false, true, false, random);
            wrong = wrong || numerics::encode(in[i], l, Rounding::toward_zero, o) != toward_zero ||
                    numerics::encode(in[i], l, Rounding::stochastic, o, random) != stochastic ||
                    bulk_toward_zero[i] != toward_zero || bulk_stochastic[i] != stochastic;
          }
          if (wrong) bad(bits);
        }
      });
  EXPECT_EQ(sweep.mismatches, 0u) << numerics::name(f) << " first bad input 0x" << std::hex
                                  << sweep.first_bad;
}

// round_to_format (in place, nearest-even, the format's default overflow) on every float32
// pattern: the vector rounding of in-range groups and the vector codec of out-of-range ones,
// against the exact reference's encode and decode.
class RoundExhaustive : public ::testing::TestWithParam<FormatCase> {};

TEST_P(RoundExhaustive, AllFloat32Inputs) {
  const FormatCase& c = GetParam();
  const RefEncoder reference(c.ref);
  const Overflow o = numerics::traits(c.format).default_overflow;
  const Sweep sweep = sweep_all_float32([&](std::uint64_t start, const std::vector<float>& in,
                                            const auto& bad) {
    std::vector<float> x = in;
    numerics::round_to_format(x.data(), x.size(), c.format);
    for (std::uint64_t i = 0; i < in.size(); ++i) {
      const auto want = static_cast<float>(ref_decode(
          reference.encode(in[i], RefRounding::nearest_even, o == Overflow::saturate, 0), c.ref));
      const bool same = std::isnan(want) ? std::isnan(x[i])
                                         : std::bit_cast<std::uint32_t>(x[i]) ==
                                               std::bit_cast<std::uint32_t>(want);
      if (!same) bad(static_cast<std::uint32_t>(start + i));
    }
  });
  EXPECT_EQ(sweep.mismatches, 0u) << case_name(c.format) << " first bad input 0x" << std::hex
                                  << sweep.first_bad;
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundExhaustive, ::testing::ValuesIn(narrow_format_cases()),
                         [](const auto& info) { return case_name(info.param.format); });

INSTANTIATE_TEST_SUITE_P(Formats, BlockFormatExhaustive,
                         ::testing::Values(numerics::Format::float4_e2m1,
                                           numerics::Format::float6_e2m3,
                                           numerics::Format::float6_e3m2,
                                           numerics::Format::float8_e8m0),
                         [](const auto& info) { return std::string(numerics::name(info.param)); });

}  // namespace
}  // namespace mantissa::testing
