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

// POL decides the bf16 passes of a float16 / cbfloat16 product (4, 3, 1) and whether
// attention's softmax runs in H (POL 2; POL 1 for cbfloat16). Two levels compute the same
// bits when both agree, the passes counting as equal where fp32 routes multiply the values
// exactly in one pass whatever their number (3 or 4; POL 2 rounds the inputs to bf16 first).
TEST(SameBits, OnlyLevelsThatChangeNothingHereAreNamed) {
  using V = std::vector<int>;
  // float16 on fp32 routes: POL 0 and 1 agree, with or without attention.
  EXPECT_EQ(same_bits_opt_levels({Format::float16, 1}, true, true), V{0});
  EXPECT_EQ(same_bits_opt_levels({Format::float16, 0}, true, true), V{1});
  EXPECT_EQ(same_bits_opt_levels({Format::float16, 2}, true, true), V{});
  // ... not where a product may take a bf16 route (3 passes against 4).
  EXPECT_EQ(same_bits_opt_levels({Format::float16, 1}, true, false), V{});
  // cbfloat16 at POL 1 takes attention's softmax in H, at POL 0 in float32: the same only
  // without attention.
  EXPECT_EQ(same_bits_opt_levels({Format::cbfloat16, 1}, true, true), V{});
  EXPECT_EQ(same_bits_opt_levels({Format::cbfloat16, 1}, false, true), V{0});
  // bfloat16 is one pass at every level: POL 2 differs only in the softmax.
  EXPECT_EQ(same_bits_opt_levels({Format::bfloat16, 1}, true, false), V{0});
  EXPECT_EQ(same_bits_opt_levels({Format::bfloat16, 1}, false, false), (V{0, 2}));
  EXPECT_EQ(same_bits_opt_levels({Format::bfloat16, 2}, true, true), V{});
  // Mixed precision off: POL applies to nothing, nothing to say.
  EXPECT_EQ(same_bits_opt_levels({Format::float32, 1}, true, true), V{});
  EXPECT_EQ(same_bits_note(Format::float16, {0}),
            "the same bits as precision_opt_level 0 on these routes: float16 products on fp32 "
            "routes are exact in one pass at POL 0 and 1 (docs/engine.md \"Matrix products: "
            "routes and precision_opt_level\")");
  EXPECT_EQ(same_bits_note(Format::bfloat16, {0, 2})
                .rfind("the same bits as precision_opt_level 0 and 2 on these routes: bfloat16 "
                       "products take one pass at every level",
                       0),
            0u);
  EXPECT_EQ(same_bits_note(Format::float16, {}), "");
  EXPECT_TRUE(is_fp32_route(MatmulRoute::fp32));
  EXPECT_TRUE(is_fp32_route(MatmulRoute::onednn_fp32));
  EXPECT_FALSE(is_fp32_route(MatmulRoute::bf16));
  EXPECT_FALSE(is_fp32_route(MatmulRoute::onednn_bf16));
  EXPECT_FALSE(is_fp32_route(MatmulRoute::amx));
  EXPECT_FALSE(is_fp32_route(MatmulRoute::automatic));
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
