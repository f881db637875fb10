// Blocks of draws split into parts (data parallel): the parts' draws, in part order, are the
// draws of one stream without parts, and every part's state stays that stream's.
#include <gtest/gtest.h>

#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::tensor {
namespace {

TEST(RngBlocks, PartsInOrderDrawWhatOneStreamDraws) {
  for (const std::int64_t parts : {2, 3}) {
    const std::int64_t n = 5;  // draws a part takes per block
    Rng whole(42);
    std::vector<Rng> part(static_cast<std::size_t>(parts), Rng(42));
    for (std::int64_t p = 0; p < parts; ++p)
      part[static_cast<std::size_t>(p)].set_block_part({p, parts});
    for (int block = 0; block < 4; ++block) {
      whole.begin_block(n * parts);
      std::vector<double> want;
      for (std::int64_t i = 0; i < n * parts; ++i) want.push_back(whole.uniform());
      whole.end_block(n * parts);
      std::vector<double> got;
      for (Rng& r : part) {
        r.begin_block(n);
        for (std::int64_t i = 0; i < n; ++i) got.push_back(r.uniform());
        r.end_block(n);
        EXPECT_EQ(r.state().counter, whole.state().counter);
        EXPECT_EQ(r.state().seed, whole.state().seed);
      }
      EXPECT_EQ(got, want) << "block " << block << ", " << parts << " parts";
    }
  }
}

TEST(RngBlocks, WithoutAPartBlocksChangeNothing) {
  Rng a(9), b(9);
  a.begin_block(100);
  const double x = a.uniform();
  a.end_block(100);
  EXPECT_EQ(x, b.uniform());
  EXPECT_EQ(a.state().counter, 1u);
}

TEST(RngBlocks, APartOutsideTheWholeIsAnError) {
  Rng r(1);
  EXPECT_THROW(r.set_block_part({2, 2}), Error);
  EXPECT_THROW(r.set_block_part({-1, 2}), Error);
  EXPECT_THROW(r.set_block_part({0, 0}), Error);
}

}  // namespace
}  // namespace mantissa::tensor
