#pragma once
// A block-scaled operand decoded to bfloat16 by quant::dequantize_to_bf16 and by its scalar
// twin: the same answer, and the same bits in every element (where the twin's is a NaN, a
// NaN: a NaN code times a NaN scale may keep either payload).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "mantissa/quant/block_operand.hpp"

namespace mantissa::testing {

inline void expect_decode_as_twin(const quant::PackedBlocks& q) {
  std::vector<std::uint16_t> fast(static_cast<std::size_t>(q.rows * q.cols)), twin(fast.size());
  ASSERT_EQ(quant::dequantize_to_bf16(q, fast.data()),
            quant::dequantize_to_bf16_ref(q, twin.data()));
  const auto is_nan = [](std::uint16_t b) { return (b & 0x7fffu) > 0x7f80u; };
  for (std::size_t i = 0; i < fast.size(); ++i) {
    if (is_nan(twin[i])) {
      ASSERT_TRUE(is_nan(fast[i])) << "element " << i;
    } else {
      ASSERT_EQ(fast[i], twin[i]) << "element " << i;
    }
  }
}

}  // namespace mantissa::testing
