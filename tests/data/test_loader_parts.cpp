// Loaders that read one part of every batch (data parallel): the parts, in part order, are
// the batch a loader without a part returns, across epoch ends; the state counts whole
// batches, so it is the same in every part and carries over to another number of parts.
#include <gtest/gtest.h>

#include <numeric>

#include "mantissa/data/loaders.hpp"
#include "mantissa/error.hpp"

namespace mantissa::data {
namespace {

ByteText counting_text(std::int32_t n) {
  ByteText t;
  t.source = "counting";
  for (std::int32_t i = 0; i < n; ++i) t.tokens.push_back(i % 251);
  return t;
}

// 23 windows of 4: 5 batches of 4 an epoch (3 windows left over), so 12 batches cross two
// epoch ends.
TEST(LoaderParts, TextPartsInOrderAreTheWholeBatchAcrossEpochs) {
  const ByteText text = counting_text(93);
  for (const std::int64_t parts : {2, 4}) {
    TextLoader whole(text, 4, 4, true, 7);
    std::vector<TextLoader> part;
    for (std::int64_t p = 0; p < parts; ++p) {
      part.emplace_back(text, 4, 4, true, 7);
      part.back().set_part({p, parts});
    }
    for (int b = 0; b < 12; ++b) {
      const TextBatch w = whole.next();
      std::vector<std::int32_t> inputs, targets;
      for (TextLoader& l : part) {
        const TextBatch mine = l.next();
        EXPECT_EQ(mine.batch, 4 / parts);
        inputs.insert(inputs.end(), mine.inputs.begin(), mine.inputs.end());
        targets.insert(targets.end(), mine.targets.begin(), mine.targets.end());
        EXPECT_EQ(l.state().epoch, whole.state().epoch);
        EXPECT_EQ(l.state().position, whole.state().position);
      }
      EXPECT_EQ(inputs, w.inputs) << "batch " << b << ", " << parts << " parts";
      EXPECT_EQ(targets, w.targets) << "batch " << b;
    }
    EXPECT_EQ(whole.state().epoch, 2);
  }
}

TEST(LoaderParts, AStateCarriesOverToAnotherNumberOfParts) {
  const ByteText text = counting_text(93);
  TextLoader two(text, 4, 4, true, 7);
  two.set_part({1, 2});
  for (int b = 0; b < 7; ++b) two.next();
  TextLoader whole(text, 4, 4, true, 7), reference(text, 4, 4, true, 7);
  for (int b = 0; b < 7; ++b) reference.next();
  whole.set_state(two.state());
  EXPECT_EQ(whole.next().inputs, reference.next().inputs);
}

ImageDataset numbered_images(std::int64_t n) {
  ImageDataset d;
  d.height = 1;
  d.width = 2;
  std::vector<float> pixels;
  for (std::int64_t i = 0; i < n; ++i) {
    pixels.push_back(static_cast<float>(i));
    pixels.push_back(-static_cast<float>(i));
    d.labels.push_back(static_cast<std::int32_t>(i % 10));
  }
  d.images = tensor::Tensor::from_vector(pixels, {n, 2});
  return d;
}

TEST(LoaderParts, ImagePartsInOrderAreTheWholeBatch) {
  const ImageDataset data = numbered_images(21);  // 3 batches of 6 an epoch
  ImageLoader whole(data, 6, true, 3, true);
  ImageLoader a(data, 6, true, 3, true), b(data, 6, true, 3, true), c(data, 6, true, 3, true);
  a.set_part({0, 3});
  b.set_part({1, 3});
  c.set_part({2, 3});
  for (int k = 0; k < 8; ++k) {
    const ImageBatch w = whole.next();
    std::vector<float> x;
    std::vector<std::int32_t> y;
    for (ImageLoader* l : {&a, &b, &c}) {
      const ImageBatch mine = l->next();
      ASSERT_EQ(mine.x.dim(0), 2);
      const std::vector<float> v = mine.x.to_vector();
      x.insert(x.end(), v.begin(), v.end());
      y.insert(y.end(), mine.y.begin(), mine.y.end());
      EXPECT_EQ(l->state().position, whole.state().position);
    }
    EXPECT_EQ(x, w.x.to_vector()) << "batch " << k;
    EXPECT_EQ(y, w.y) << "batch " << k;
  }
}

TEST(LoaderParts, ABatchThatDoesNotSplitIsAnError) {
  const ByteText text = counting_text(93);
  TextLoader l(text, 4, 6, true, 7);
  try {
    l.set_part({1, 4});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "batch_size: 6 does not split into 4 equal parts");
  }
  EXPECT_THROW(l.set_part({2, 2}), Error);
  const ImageDataset data = numbered_images(21);
  ImageLoader validation(data, 6, false, 0, false);
  EXPECT_THROW(validation.set_part({0, 2}), Error);  // partial batches: not split
}

}  // namespace
}  // namespace mantissa::data
