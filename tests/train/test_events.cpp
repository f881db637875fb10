// The trainer draws nothing: what it has to say reaches the TrainerEvents the program lends
// it, and without them it is silent (stderr stays empty).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mantissa/error.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;

struct Recorder final : TrainerEvents {
  std::vector<std::string> messages;
  std::vector<Progress> progress_seen;
  std::vector<std::int64_t> evaluations;
  void message(const std::string& line) override { messages.push_back(line); }
  void progress(const Progress& p) override { progress_seen.push_back(p); }
  void evaluated(const EvalResult&, std::int64_t step) override { evaluations.push_back(step); }
};

struct TinyRun {
  fs::path dir = fs::temp_directory_path() / ("mantissa_events_" + std::to_string(::getpid()));
  TinyRun() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream out(dir / "text.txt");
    for (int i = 0; i < 300; ++i) out << "events go to the program, which draws them\n";
  }
  ~TinyRun() { fs::remove_all(dir); }
  TrainerConfig config(const std::string& dataset = "text") const {
    return parse_config(R"(
trainer:
  init:
    model: {name: gpt, max_position_embeddings: 16, hidden_size: 16, num_hidden_layers: 1,
            num_heads: 2, filter_size: 32}
    optimizer: {AdamW: {learning_rate: 1.0e-3}}
    precision: {fp16_type: bfloat16, loss_scaling_factor: dynamic}
    loop: {max_steps: 4, eval_frequency: 2, eval_steps: 1}
    checkpoint: {dir: )" + (dir / "run").string() +
                            R"(}
    logging: {log_steps: 2}
  fit:
    train_dataloader: {dataset: )" +
                            dataset + ", path: " + (dir / "text.txt").string() + R"(, data_dir: )" +
                            (dir / "data").string() + R"(, batch_size: 2, context: 16}
)",
                        {}, "events");
  }
};

TEST(TrainerEvents, EverythingReachesTheEventsAndNothingTheTerminal) {
  TinyRun r;
  Recorder rec;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  Trainer(r.config(), {&rec, {}}).run(RunMode::train_and_eval);
  Trainer(r.config(), {}).run(RunMode::train_and_eval, "latest");  // no events: silent
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
