// Views (permute, transpose, slice, select, unsqueeze) and strided copies, against element
// positions computed here from the row-major index formula.
#include <gtest/gtest.h>

#include <limits>
#include <numeric>

#include "mantissa/error.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::tensor {
namespace {

// 0, 1, 2, ... in a [2, 3, 4] tensor: the value at (i, j, k) is its row-major index.
constexpr std::int64_t kD0 = 2, kD1 = 3, kD2 = 4;
Tensor iota234(Format f = Format::float32) {
  std::vector<float> v(kD0 * kD1 * kD2);
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from_vector(v, {kD0, kD1, kD2}, f);
}
float at(std::int64_t i, std::int64_t j, std::int64_t k) {
  return static_cast<float>((i * kD1 + j) * kD2 + k);
}

TEST(TensorViews, PermuteReordersAxesWithoutCopying) {
  const Tensor t = iota234();
  const Tensor p = t.permute({2, 0, 1});  // [4, 2, 3]: p(k, i, j) = t(i, j, k)
  EXPECT_EQ(p.shape(), (Shape{kD2, kD0, kD1}));
  EXPECT_EQ(p.strides(), (Shape{1, kD1 * kD2, kD2}));
  EXPECT_TRUE(p.shares_storage(t));
  EXPECT_FALSE(p.is_contiguous());
  const std::vector<float> got = p.to_vector();
  std::size_t n = 0;
  for (std::int64_t k = 0; k < kD2; ++k)
    for (std::int64_t i = 0; i < kD0; ++i)
      for (std::int64_t j = 0; j < kD1; ++j) EXPECT_EQ(got[n++], at(i, j, k)) << k << i << j;
  // transpose is the permutation that swaps two axes; negative axes count from the end.
  EXPECT_EQ(t.transpose(0, -1).to_vector(), t.permute({2, 1, 0}).to_vector());
  EXPECT_THROW(t.permute({0, 0, 1}), Error);
  EXPECT_THROW(t.permute({0, 1}), Error);
}

TEST(TensorViews, SliceAndSelectOffsetIntoTheSameStorage) {
  const Tensor t = iota234();
  const Tensor s = t.slice(1, 1, 3);  // [2, 2, 4]: rows j = 1, 2
  EXPECT_EQ(s.shape(), (Shape{kD0, 2, kD2}));
  EXPECT_EQ(s.offset(), kD2);
  EXPECT_TRUE(s.shares_storage(t));
  const std::vector<float> got = s.to_vector();
  std::size_t n = 0;
  for (std::int64_t i = 0; i < kD0; ++i)
    for (std::int64_t j = 1; j < 3; ++j)
      for (std::int64_t k = 0; k < kD2; ++k) EXPECT_EQ(got[n++], at(i, j, k));
  const Tensor col = t.select(2, 3);  // [2, 3]: k = 3
  EXPECT_EQ(col.shape(), (Shape{kD0, kD1}));
  EXPECT_EQ(col.to_vector(), (std::vector<float>{at(0, 0, 3), at(0, 1, 3), at(0, 2, 3), at(1, 0, 3),
                                                 at(1, 1, 3), at(1, 2, 3)}));
  // A view of a view: select then slice.
  EXPECT_EQ(t.select(0, 1).slice(0, 2, 3).to_vector(),
            (std::vector<float>{at(1, 2, 0), at(1, 2, 1), at(1, 2, 2), at(1, 2, 3)}));
  EXPECT_EQ(t.slice(2, 4, 4).numel(), 0);  // empty ranges are views too
  EXPECT_THROW(t.slice(1, 2, 4), Error);
  EXPECT_THROW(t.select(0, 2), Error);
  EXPECT_THROW(t.select(3, 0), Error);
}

TEST(TensorViews, UnsqueezeAddsASizeOneAxisAnywhere) {
  const Tensor t = iota234();
  for (int d : {0, 1, 2, 3, -1}) {
    const Tensor u = t.unsqueeze(d);
    const int at_dim = d < 0 ? 3 : d;
    ASSERT_EQ(u.ndim(), 4) << d;
    EXPECT_EQ(u.dim(at_dim), 1) << d;
    EXPECT_TRUE(u.is_contiguous()) << d;
    EXPECT_EQ(u.to_vector(), t.to_vector()) << d;
    EXPECT_EQ(u.select(at_dim, 0).shape(), t.shape()) << d;
  }
  // Of a non-contiguous view: the values follow the view's order.
  const Tensor p = t.permute({1, 0, 2}).unsqueeze(1);  // [3, 1, 2, 4]
  EXPECT_EQ(p.shape(), (Shape{kD1, 1, kD0, kD2}));
  EXPECT_EQ(p.to_vector(), t.permute({1, 0, 2}).to_vector());
  EXPECT_THROW(t.unsqueeze(5), Error);
}

TEST(TensorViews, ViewNeedsContiguityReshapeCopies) {
  const Tensor t = iota234();
  EXPECT_TRUE(t.view({6, 4}).shares_storage(t));
  EXPECT_THROW(t.view({5, 5}), Error);
  const Tensor p = t.transpose(1, 2);
  EXPECT_THROW(p.view({24}), Error);
  const Tensor r = p.reshape({24});
  EXPECT_FALSE(r.shares_storage(t));
  EXPECT_EQ(r.to_vector(), p.to_vector());
}

TEST(TensorCopies, StridedCopyWritesOnlyTheViewsElements) {
  for (Format f : {Format::float32, Format::float16, Format::bfloat16, Format::float8_e4m3}) {
    Tensor dst = Tensor::zeros({kD0, kD1, kD2}, f);
    // Write a [3, 2] block (j, i) into the k = 1 column through a transposed view.
    Tensor window = dst.select(2, 1).transpose(0, 1);
    window.copy_from(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {kD1, kD0}));
    std::vector<float> want(kD0 * kD1 * kD2, 0.0f);
    float v = 1;
    for (std::int64_t j = 0; j < kD1; ++j)
      for (std::int64_t i = 0; i < kD0; ++i) want[static_cast<std::size_t>(at(i, j, 1))] = v++;
    EXPECT_EQ(dst.to_vector(), want) << numerics::name(f);
  }
  Tensor small = Tensor::zeros({2, 2});
  EXPECT_THROW(small.copy_from(Tensor::zeros({4})), Error);
}

TEST(TensorCopies, CopyConvertsAndRoundsToTheDestinationFormat) {
  // 1 + 2^-11 lies halfway between float16's 1 and 1 + 2^-10: nearest-even gives 1.
  // 3 + 2^-9 + 2^-10 lies halfway between 3 + 2^-9 (odd) and 3 + 2^-8 (even): up.
  // 70000 is past float16's max 65504: infinity.
  Tensor dst = Tensor::zeros({2, 3}, Format::float16);
  Tensor column = dst.transpose(0, 1);  // [3, 2]
  column.copy_from(Tensor::from_vector(
      {1.0f + 0x1p-11f, 3.0f + 0x1p-9f + 0x1p-10f, 70000.0f, -0.5f, 0.0f, 0x1p-24f}, {3, 2}));
  const std::vector<float> got = dst.to_vector();
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[3], 3.0f + 0x1p-8f);
  EXPECT_EQ(got[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[4], -0.5f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[5], 0x1p-24f);  // float16's smallest subnormal survives
}

TEST(TensorCopies, CloneAndContiguousOfAView) {
  const Tensor t = iota234(Format::bfloat16);
  const Tensor p = t.permute({2, 1, 0});
  const Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(t));
  EXPECT_EQ(c.format(), Format::bfloat16);
  EXPECT_EQ(c.to_vector(), p.to_vector());
  EXPECT_TRUE(t.contiguous().shares_storage(t));  // already contiguous: itself
  Tensor copy = t.clone();
  copy.fill(7.0f);
  EXPECT_EQ(t.to_vector()[5], 5.0f);  // the clone owns its storage
  const Tensor as16 = p.to(Format::float16);
  EXPECT_TRUE(as16.is_contiguous());
  EXPECT_EQ(as16.to_vector(), p.to_vector());  // 0..23 are exact in both formats
}

}  // namespace
}  // namespace mantissa::tensor
