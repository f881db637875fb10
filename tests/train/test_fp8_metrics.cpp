// fp8 linear layers in the trainer: every training record of metrics.jsonl carries the
// window's overflow and underflow counts, per tensor and in total.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mantissa/train/trainer.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

TEST(Fp8Metrics, TrainingRecordsCountOverflowsAndUnderflowsPerTensor) {
  TinyRun run("fp8_metrics");
  // Scales start at 1: the first step casts the gradients to e5m2 unscaled, and the
  // smallest of this tiny model's flush to zero (smallest e5m2 subnormal: 2^-16).
  Trainer t(run.config("text", {"trainer.init.precision.fp8={enabled: true, history_length: 2}"}));
  t.run(RunMode::train);
  int records = 0;
  std::int64_t underflows = 0;
  for (const std::string& line : run.metrics()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("step")) continue;
    ++records;
    ASSERT_TRUE(j.contains("fp8_overflows")) << line;
    ASSERT_TRUE(j.contains("fp8_underflows")) << line;
    std::int64_t o = 0, u = 0;
    for (const auto& [name, c] : j.at("fp8_tensors").items()) {
      EXPECT_TRUE(name.find(".input") != std::string::npos ||
                  name.find(".weight") != std::string::npos ||
                  name.find(".grad") != std::string::npos)
          << name;
      o += c.at("overflows").get<std::int64_t>();
      u += c.at("underflows").get<std::int64_t>();
    }
    EXPECT_EQ(o, j.at("fp8_overflows").get<std::int64_t>()) << line;
    EXPECT_EQ(u, j.at("fp8_underflows").get<std::int64_t>()) << line;
    underflows += u;
  }
  EXPECT_EQ(records, 2);  // steps 2 and 4
  EXPECT_GT(underflows, 0);
}

}  // namespace
}  // namespace mantissa::train
