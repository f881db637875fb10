// Label `long`: every one of the 2^32 float32 patterns, per format and rounding mode, through
// the scalar codec and the active bulk path, against the exact reference. About 30 minutes
// on 2 cores; run with `ctest --test-dir build -L long`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "reference_formats.hpp"

namespace mantissa::testing {
namespace {

using numerics::Overflow;
using numerics::Rounding;

class EncodeExhaustive : public ::testing::TestWithParam<FormatRounding> {};

TEST_P(EncodeExhaustive, AllFloat32Inputs) {
  const FormatCase& c = std::get<0>(GetParam());
  const Rounding r = std::get<1>(GetParam());
  const RefEncoder reference(c.ref);
  const numerics::Layout& l = numerics::layout(c.format);
  const Overflow o = numerics::traits(c.format).default_overflow;
  constexpr std::uint64_t kChunk = 1u << 20;
  constexpr std::uint64_t kTotal = std::uint64_t{1} << 32;
  std::atomic<std::uint64_t> next{0}, mismatches{0};
  std::atomic<std::uint32_t> first_bad{0};
  auto worker = [&] {
    std::vector<float> in(kChunk);
    std::vector<std::uint8_t> bulk(kChunk * c.storage_bytes);
    numerics::ConvertOptions opt;
    opt.rounding = r;
    opt.overflow = o;
    opt.seed = 99;
    for (std::uint64_t start; (start = next.fetch_add(kChunk)) < kTotal;) {
      for (std::uint64_t i = 0; i < kChunk; ++i) {
        in[i] = std::bit_cast<float>(static_cast<std::uint32_t>(start + i));
      }
      opt.counter = start;
      numerics::encode_array(in.data(), kChunk, c.format, bulk.data(), opt);
      for (std::uint64_t i = 0; i < kChunk; ++i) {
        const std::uint32_t random = numerics::stochastic_bits(opt.seed, start + i);
        const std::uint32_t want =
            reference.encode(in[i], to_ref(r), o == Overflow::saturate, random);
        std::uint32_t fast = 0;
        std::memcpy(&fast, bulk.data() + i * c.storage_bytes, c.storage_bytes);
        const std::uint32_t scalar = numerics::encode(in[i], l, r, o, random);
        if (scalar != want || fast != want) {
          if (mismatches.fetch_add(1) == 0) first_bad = static_cast<std::uint32_t>(start + i);
        }
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0u)
      << case_name(c.format) << " first bad input 0x" << std::hex << first_bad.load();
}

INSTANTIATE_TEST_SUITE_P(Formats, EncodeExhaustive, all_formats_and_roundings(),
                         format_rounding_name);

}  // namespace
}  // namespace mantissa::testing
