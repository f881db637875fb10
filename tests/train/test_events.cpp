// The trainer draws nothing: what it has to say reaches the TrainerEvents the program lends
// it, and without them it is silent (stderr stays empty).
#include <gtest/gtest.h>

#include <filesystem>

#include "mantissa/error.hpp"
#include "mantissa/train/trainer.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;

TEST(TrainerEvents, EverythingReachesTheEventsAndNothingTheTerminal) {
  TinyRun r;
  Recorder rec;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  Trainer(r.config(), {&rec, {}}).run(RunMode::train_and_eval);
  Trainer(r.config(), {}).run(RunMode::train_and_eval, ResumeFrom::latest());  // no events: silent
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(rec.progress_seen.size(), 2u);  // log_steps 2 of 4 steps
  EXPECT_EQ(rec.progress_seen[0].step, 2);
  EXPECT_EQ(rec.progress_seen[1].step, 4);
  EXPECT_EQ(rec.progress_seen[1].max_steps, 4);
  EXPECT_STREQ(rec.progress_seen[1].unit, "tokens");
  EXPECT_EQ(rec.evaluations, (std::vector<std::int64_t>{2, 4}));
  ASSERT_FALSE(rec.messages.empty());
  EXPECT_EQ(rec.messages[0].rfind("bfloat16 has float32's range", 0), 0u) << rec.messages[0];
  bool setup = false;
  for (const std::string& m : rec.messages) setup = setup || m.rfind("training gpt", 0) == 0;
  EXPECT_TRUE(setup);
}

TEST(TrainerEvents, TheKjvCorpusComesFromTheProgramsProvider) {
  TinyRun r;
  try {
    Trainer t(r.config("kjv"), {});
    FAIL() << "without a provider or a cache there is no corpus";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no corpus provider"), std::string::npos) << e.what();
  }
  int calls = 0;
  const std::string text(1500000, 'a');
  Trainer t(r.config("kjv"), {nullptr, [&] {
                                ++calls;
                                return text;
                              }});
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(fs::exists(r.dir / "data" / "kjv.txt"));
}

}  // namespace
}  // namespace mantissa::train
