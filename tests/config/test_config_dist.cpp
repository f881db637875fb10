// trainer.init.dist: read once into typed settings; each bad value named by its key.
#include <gtest/gtest.h>

#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"

namespace mantissa::config {
namespace {

const char* kBase = R"(
trainer:
  init:
    model: {name: mlp, input_size: 784, hidden_sizes: [32], num_classes: 10}
    optimizer: {AdamW: {learning_rate: 1.0e-3}}
    loop: {max_steps: 10}
  fit:
    train_dataloader: {dataset: fashion_mnist, batch_size: 64}
)";

std::string error_of(const std::string& override_text) {
  try {
    parse_config(kBase, {override_text}, "test.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(DistConfig, DefaultsArePyTorchDdpsBucketAndAThirtySecondWait) {
  const DistConfig d = parse_config(kBase, {}, "test.yaml").dist;
  EXPECT_EQ(d.allreduce_dtype, dist::WireFormat::float32);
  EXPECT_EQ(d.bucket_cap_mb, 25.0);
  EXPECT_EQ(d.bucket_cap_bytes(), 25 * 1024 * 1024);
  EXPECT_EQ(d.timeout_seconds, 30.0);
  EXPECT_TRUE(d.overlap);
}

TEST(DistConfig, WordsAndNumbersBecomeTypedValues) {
  const DistConfig d =
      parse_config(kBase,
                   {"trainer.init.dist={allreduce_dtype: bfloat16, bucket_cap_mb: 0.5, "
                    "timeout_seconds: 2.5, overlap: false}"},
                   "test.yaml")
          .dist;
  EXPECT_EQ(d.allreduce_dtype, dist::WireFormat::bfloat16);
  EXPECT_EQ(d.bucket_cap_bytes(), 512 * 1024);
  EXPECT_EQ(d.timeout_seconds, 2.5);
  EXPECT_FALSE(d.overlap);
  // The smallest cap still holds one float32 gradient.
  EXPECT_EQ(
      parse_config(kBase, {"trainer.init.dist.bucket_cap_mb=1.0e-9"}, "t").dist.bucket_cap_bytes(),
      4);
}

TEST(DistConfig, EachBadValueIsNamedByItsKey) {
  EXPECT_EQ(error_of("trainer.init.dist.allreduce_dtype=float16"),
            "trainer.init.dist.allreduce_dtype: 'float16' (expected one of: float32, bfloat16)");
  EXPECT_EQ(error_of("trainer.init.dist.bucket_cap_mb=0"),
            "trainer.init.dist.bucket_cap_mb: 0 must be in (0, 65536] (MiB)");
  EXPECT_EQ(error_of("trainer.init.dist.bucket_cap_mb=100000"),
            "trainer.init.dist.bucket_cap_mb: 100000 must be in (0, 65536] (MiB)");
  EXPECT_EQ(error_of("trainer.init.dist.bucket_cap_mb=lots"),
            "trainer.init.dist.bucket_cap_mb: 'lots' is not a number");
  EXPECT_EQ(error_of("trainer.init.dist.timeout_seconds=-1"),
            "trainer.init.dist.timeout_seconds: -1 must be in (0, 86400] (seconds)");
  EXPECT_EQ(error_of("trainer.init.dist.timeout_seconds=.nan"),
            "trainer.init.dist.timeout_seconds: '.nan' is not a finite number");
  EXPECT_EQ(error_of("trainer.init.dist.overlap=sometimes"),
            "trainer.init.dist.overlap: 'sometimes' is not true or false");
  EXPECT_EQ(error_of("trainer.init.dist.world_size=2"),
            "trainer.init.dist.world_size: unknown key (expected one of: allreduce_dtype, "
            "bucket_cap_mb, overlap, timeout_seconds)");
}

TEST(DistConfig, TheWireFormatsHaveOneWordEach) {
  EXPECT_EQ(find_named(dist::kWireFormatNames, "float32"), dist::WireFormat::float32);
  EXPECT_EQ(find_named(dist::kWireFormatNames, "bfloat16"), dist::WireFormat::bfloat16);
  EXPECT_EQ(name_of(dist::kWireFormatNames, dist::WireFormat::bfloat16), "bfloat16");
}

}  // namespace
}  // namespace mantissa::config
