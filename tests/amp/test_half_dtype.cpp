// amp::set_half_dtype and amp::autocast: the vendor's cstorch.amp.set_half_dtype (float16
// until set) and autocast, as a scoped precision Policy.
#include <gtest/gtest.h>

#include "mantissa/amp/autocast.hpp"
#include "mantissa/error.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;

TEST(HalfDtype, Float16UntilSetThenTheAutocastPolicy) {
  EXPECT_EQ(amp::half_dtype(), Format::float16);  // "By default ... uses float16"
  EXPECT_FALSE(precision::current_policy().enabled());
  {
    auto cast = amp::autocast();
    EXPECT_EQ(precision::current_policy().half, Format::float16);
    EXPECT_EQ(precision::current_policy().opt_level, 1);
  }
  EXPECT_EQ(amp::set_half_dtype(Format::cbfloat16), Format::cbfloat16);  // no proxy dtype
  {
    auto cast = amp::autocast(2);
    EXPECT_EQ(precision::current_policy().half, Format::cbfloat16);
    EXPECT_EQ(precision::current_policy().opt_level, 2);
  }
  EXPECT_FALSE(precision::current_policy().enabled());  // the guard restored float32
  try {
    amp::set_half_dtype(Format::float8_e4m3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "fp16_type: 'float8_e4m3' (expected one of: float16, bfloat16, cbfloat16)");
  }
  EXPECT_EQ(amp::half_dtype(), Format::cbfloat16);  // unchanged by the refused value
  amp::set_half_dtype(Format::float16);
}

}  // namespace
}  // namespace mantissa::testing
