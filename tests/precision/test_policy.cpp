// The precision Policy's rules (docs/design.md section 3): which formats it takes, the bf16 pass
// count of matmuls per format and POL, where attention's softmax runs, and the Autocast scope.
#include <gtest/gtest.h>

#include <thread>

#include "mantissa/error.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::precision {
namespace {

void expect_error(const Policy& p, const std::string& fragment) {
  try {
    p.validate();
    FAIL() << "expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Policy, TakesFloat32OrAHalfFormatAndPol0To2) {
  for (Format f : {Format::float32, Format::float16, Format::bfloat16, Format::cbfloat16}) {
    for (int pol : {0, 1, 2}) EXPECT_NO_THROW((Policy{f, pol}.validate()));
  }
  expect_error({Format::float8_e4m3, 1},
               "fp16_type: 'float8_e4m3' (expected one of: float16, bfloat16, cbfloat16)");
  expect_error({Format::float16, 3}, "precision_opt_level: 3 (expected one of: 0, 1, 2)");
  expect_error({Format::float16, -1}, "precision_opt_level: -1");
  EXPECT_TRUE(is_half_format(Format::cbfloat16));
  EXPECT_FALSE(is_half_format(Format::float32));
  EXPECT_FALSE(is_half_format(Format::float8_e5m2));
  EXPECT_FALSE((Policy{Format::float32, 1}.enabled()));
  EXPECT_TRUE((Policy{Format::bfloat16, 1}.enabled()));
  EXPECT_EQ((Policy{Format::cbfloat16, 1}.describe()), "cbfloat16, POL 1");
  EXPECT_EQ((Policy{Format::float32, 2}.describe()), "float32 (mixed precision off)");
}

TEST(Policy, MatmulPassesFollowTheTable) {
  // docs/design.md: float16/cbfloat16 4 passes at POL 0, 3 at POL 1, 1 at POL 2; bfloat16, fp8
  // and float32 always 1.
  const int split[3] = {4, 3, 1};
  for (int pol = 0; pol <= 2; ++pol) {
    EXPECT_EQ(matmul_passes(Format::float16, pol), split[pol]) << pol;
    EXPECT_EQ(matmul_passes(Format::cbfloat16, pol), split[pol]) << pol;
    for (Format f : {Format::bfloat16, Format::float8_e4m3, Format::float8_e5m2, Format::float32}) {
      EXPECT_EQ(matmul_passes(f, pol), 1) << numerics::name(f) << " POL " << pol;
    }
  }
}

TEST(Policy, AttentionSoftmaxInHalfAtPol2AndForCbFloat16AtPol1) {
  for (Format f : {Format::float16, Format::bfloat16, Format::cbfloat16}) {
    EXPECT_FALSE(attention_softmax_in_half({f, 0})) << numerics::name(f);
    EXPECT_EQ(attention_softmax_in_half({f, 1}), f == Format::cbfloat16) << numerics::name(f);
    EXPECT_TRUE(attention_softmax_in_half({f, 2})) << numerics::name(f);
  }
  EXPECT_FALSE(attention_softmax_in_half({Format::float32, 2}));  // off is off
}

TEST(Autocast, SetsThePolicyForItsScopeOnThisThreadOnly) {
  EXPECT_EQ(current_policy().half, Format::float32);
  EXPECT_EQ(activation_format(), Format::float32);
  {
    Autocast outer({Format::bfloat16, 2});
    EXPECT_EQ(activation_format(), Format::bfloat16);
    {
      Autocast inner({Format::float16, 0});
      EXPECT_EQ(current_policy().half, Format::float16);
      EXPECT_EQ(current_policy().opt_level, 0);
      Format elsewhere = Format::float16;
      std::thread([&] { elsewhere = current_policy().half; }).join();
      EXPECT_EQ(elsewhere, Format::float32);
    }
    EXPECT_EQ(current_policy().half, Format::bfloat16);  // restored
    EXPECT_EQ(current_policy().opt_level, 2);
    EXPECT_THROW(Autocast({Format::float8_e4m3, 1}), Error);
    EXPECT_EQ(current_policy().half, Format::bfloat16);  // a refused policy changes nothing
  }
  EXPECT_EQ(current_policy().half, Format::float32);
}

}  // namespace
}  // namespace mantissa::precision
