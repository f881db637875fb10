// The tensor API under mistaken use (the library audit of 2026-11-28, docs/reliability.md):
// shape edits out of range, an undefined tensor filled, safetensors names that are not JSON
// text or that take the header's reserved key are refused with mantissa::Error (once an
// out-of-bounds write, a crash, a nlohmann exception and an unreadable file).
#include <gtest/gtest.h>

#include "error_of.hpp"
#include "mantissa/error.hpp"
#include "mantissa/tensor/random.hpp"
#include "mantissa/tensor/safetensors.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::tensor {
namespace {

using testing::error_of;

TEST(TensorMisuse, ShapeEditsOutOfRangeAreRefused) {
  Shape s{2, 3};
  std::string e = error_of([&] { s.insert(9, 4); });
  EXPECT_NE(e.find("insert at 9 (expected 0..2)"), std::string::npos) << e;
  e = error_of([&] { s.insert(-1, 4); });
  EXPECT_NE(e.find("insert at -1"), std::string::npos) << e;
  e = error_of([&] { s.insert(1, -4); });
  EXPECT_NE(e.find("negative dimension -4"), std::string::npos) << e;
  e = error_of([&] { s.erase(2); });
  EXPECT_NE(e.find("erase at 2 (expected 0..1)"), std::string::npos) << e;
  e = error_of([&] { Shape{}.erase(0); });
  EXPECT_NE(e.find("erase at 0"), std::string::npos) << e;
  EXPECT_EQ(s, (Shape{2, 3}));  // untouched by the refusals
  s.insert(2, 5);               // at the end: allowed
  s.erase(0);
  EXPECT_EQ(s, (Shape{3, 5}));
}

TEST(TensorMisuse, AnUndefinedTensorCannotBeFilled) {
  Tensor t;
  const std::string e = error_of([&] { t.fill(0.0f); });
  EXPECT_NE(e.find("Tensor::fill"), std::string::npos) << e;
}

TEST(TensorMisuse, CopyingFromAnUndefinedTensorNamesTheSource) {
  Tensor t = Tensor::full(Shape{2}, 3.0f);
  EXPECT_EQ(error_of([&] { t.copy_from(Tensor()); }),
            "Tensor::copy_from: the source tensor is undefined");
  EXPECT_EQ(t.to_vector(), (std::vector<float>{3.0f, 3.0f}));
}

TEST(TensorMisuse, ATensorPastTheAddressSpaceNamesItsShape) {
  // 2^62 bytes: more than a 48-bit address space maps, so the allocation fails everywhere
  // (once std::bad_alloc, with no word of which tensor).
  const Shape huge{std::int64_t{1} << 40, std::int64_t{1} << 20};
  EXPECT_EQ(error_of([&] { (void)Tensor::empty(huge); }),
            "tensor of shape [1099511627776, 1048576] float32: 4611686018427387904 bytes could "
            "not be allocated");
}

TEST(TensorMisuse, SafetensorsNamesMustBeTextAndNotTheReservedKey) {
  const Tensor x = Tensor::zeros(Shape{2});
  std::string e = error_of([&] { encode_safetensors({{"a\xff", x}}); });
  EXPECT_NE(e.find("is not UTF-8 text"), std::string::npos) << e;
  e = error_of([&] { encode_safetensors({{"a", x}}, {{"k", "\xc3"}}); });  // cut short
  EXPECT_NE(e.find("metadata entry 'k' is not UTF-8 text"), std::string::npos) << e;
  e = error_of([&] { encode_safetensors({{"\xed\xa0\x80", x}}); });  // a surrogate
  EXPECT_NE(e.find("is not UTF-8 text"), std::string::npos) << e;
  e = error_of([&] { encode_safetensors({{"__metadata__", x}}, {{"k", "v"}}); });
  EXPECT_NE(e.find("may not be named '__metadata__'"), std::string::npos) << e;
  // Multi-byte names are text: written and read back.
  const SafetensorsFile f = decode_safetensors(encode_safetensors({{"w\xc3\xa9ight", x}}), "test");
  EXPECT_EQ(f.tensors.count("w\xc3\xa9ight"), 1u);
}

TEST(TensorMisuse, ARandomBlockOfNegativeOrOverflowingSizeIsRefused) {
  // A negative block once moved the counter back by 2^64 - 10 (draws repeated).
  Rng r(7);
  r.set_block_part({1, 2});
  std::string e = error_of([&] { r.begin_block(-10); });
  EXPECT_NE(e.find("a block of -10 draws (expected >= 0)"), std::string::npos) << e;
  Rng big(7);
  big.set_block_part({2, 3});
  e = error_of([&] { big.begin_block(std::int64_t{1} << 62); });
  EXPECT_NE(e.find("overflows the counter"), std::string::npos) << e;
  // The refusals left the stream where it was: the same draws as a fresh one.
  Rng fresh(7);
  fresh.set_block_part({1, 2});
  EXPECT_EQ(r.next_u64(), fresh.next_u64());
}

}  // namespace
}  // namespace mantissa::tensor
