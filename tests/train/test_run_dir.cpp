// What a run does to its run directory and before its first step: it never overwrites or
// deletes checkpoints it did not write, refuses a directory another process holds, finds
// validation data too small before training, stops at a step boundary with a checkpoint
// when asked, and holds a resumed checkpoint's precision and optimizer against the config's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "error_of.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "tiny_run.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(RunDir, AFreshRunNeverTouchesCheckpointsItDidNotWrite) {
  TinyRun r("rundir_fresh");
  Trainer(r.config()).run(RunMode::train);  // another run's checkpoint, at step 4
  const fs::path theirs = r.dir / "run" / "ckpt-00000004.safetensors";
  const fs::path renamed = r.dir / "run" / "ckpt-00000100.safetensors";
  fs::rename(theirs, renamed);  // at a step higher than the new run will reach
  const std::string before = bytes_of(renamed);
  const std::string run_dir = (r.dir / "run").string();
  EXPECT_EQ(error_of([&] { Trainer(r.config()).run(RunMode::train); }),
            run_dir +
                ": already holds checkpoints of another run (ckpt-00000100.safetensors); a "
                "fresh run never overwrites or deletes them: resume that run with --resume "
                "latest, set trainer.init.checkpoint.dir to another directory, or move them "
                "away");
  EXPECT_EQ(bytes_of(renamed), before);
  EXPECT_EQ(list_checkpoints(run_dir), std::vector<std::string>{renamed.string()});
}

TEST(RunDir, ARunDirectoryAnotherProcessHoldsIsRefused) {
  TinyRun r("rundir_lock");
  const fs::path dir = r.dir / "run";
  fs::create_directories(dir);
  const int fd = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // an open file description of its own
  ASSERT_EQ(::write(fd, "4242\n", 5), 5);
  EXPECT_EQ(error_of([&] { Trainer(r.config()).run(RunMode::train); }),
            dir.string() +
                ": another mantissa process (pid 4242) is using this run directory "
                "(it holds " +
                (dir / ".lock").string() +
                "); wait for it to finish, or set trainer.init.checkpoint.dir to another "
                "directory");
  EXPECT_TRUE(list_checkpoints(dir.string()).empty());
  ::close(fd);  // released: the run goes ahead
  EXPECT_EQ(Trainer(r.config()).run(RunMode::train).global_step, 4);
}

TEST(RunDir, ValidationDataTooSmallFailsBeforeTheFirstStep) {
  TinyRun r("rundir_val");
  const TrainerConfig c = r.config(
      "text", {"trainer.fit.train_dataloader.val_fraction=0.002",
               "trainer.fit.val_dataloader={dataset: text, path: " + (r.dir / "text.txt").string() +
                   ", split: val, val_fraction: 0.002, batch_size: 4, context: 16}"});
  const std::string e = error_of([&] { Trainer(c).run(RunMode::train_and_eval); });
  EXPECT_EQ(e.rfind("validation data: " + (r.dir / "text.txt").string() +
                        " [val]: 26 tokens make 1 windows of context 16, fewer than one batch of "
                        "4 (give validation more data, or lower the val_dataloader's batch_size "
                        "or context)",
                    0),
            0u)
      << e;
  EXPECT_TRUE(list_checkpoints((r.dir / "run").string()).empty());
  EXPECT_TRUE(r.metrics().empty());
  // Training alone reads no validation data.
  EXPECT_EQ(Trainer(c).run(RunMode::train).global_step, 4);
}

// Events that raise the program's stop flag once step 2 is logged.
struct StopAtStep2 final : TrainerEvents {
  std::atomic<bool> stop{false};
  void progress(const Progress& p) override {
    if (p.step == 2) stop.store(true);
  }
};

TEST(RunDir, AStopRequestCheckpointsAtTheNextStepBoundary) {
  TinyRun r("rundir_stop");
  StopAtStep2 events;
  const RunSummary s = Trainer(r.config("text", {"trainer.init.loop.max_steps=100"}),
                               {&events, {}, {}, &events.stop})
                           .run(RunMode::train_and_eval);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.global_step, 2);
  EXPECT_EQ(s.last_checkpoint, (r.dir / "run" / "ckpt-00000002.safetensors").string());
  EXPECT_EQ(decode_checkpoint_meta(load_checkpoint(s.last_checkpoint).metadata, "").global_step, 2);
}

TEST(RunDir, AResumedRunHoldsTheCheckpointsSettingsAgainstTheConfigs) {
  TinyRun r("rundir_settings");
  Trainer(r.config()).run(RunMode::train);  // AdamW, bfloat16
  const std::string ckpt = (r.dir / "run" / "ckpt-00000004.safetensors").string();
  const TrainerConfig sgd = r.config(
      "text", {"trainer.init.optimizer={SGD: {lr: 0.01}}", "trainer.init.loop.max_steps=6"});
  const std::string e = error_of([&] { Trainer(sgd).run(RunMode::train, ResumeFrom::latest()); });
  EXPECT_EQ(e.rfind(ckpt + ": the checkpoint was trained with other settings than the "
                           "config's: trainer.init.optimizer is {AdamW: {learning_rate: 1.0e-3}} "
                           "in the checkpoint, {SGD: {lr: 0.01}} in the config. Say which win:",
                    0),
            0u)
      << e;
  // The checkpoint's win: AdamW goes on, and the next checkpoint's config says so.
  Recorder rec;
  Trainer resumed(sgd, {&rec, {}});
  EXPECT_EQ(
      resumed.run(RunMode::train, ResumeFrom::latest(), ResumeSettings::checkpoint).global_step, 6);
  EXPECT_TRUE(rec.said("resuming with the checkpoint's settings, not the config's"));
  const Checkpoint next = load_checkpoint((r.dir / "run" / "ckpt-00000006.safetensors").string());
  EXPECT_NE(next.metadata.at("config").find("AdamW"), std::string::npos);
  EXPECT_NE(next.tensors.count("optimizer.wte.weight.exp_avg"), 0u);
}

TEST(ResumeFrom, TheWordsBecomeTypedValues) {
  EXPECT_EQ(parse_resume("latest", "--resume"), ResumeFrom::latest());
  EXPECT_EQ(parse_resume("runs/a/checkpoint_6.safetensors", "--resume"),
            ResumeFrom::checkpoint("runs/a/checkpoint_6.safetensors"));
  // A path is never read as the word: ./latest is a file called latest.
  EXPECT_EQ(parse_resume("./latest", "--resume").kind, ResumeFrom::Kind::checkpoint);
  EXPECT_FALSE(ResumeFrom{});
  EXPECT_EQ(error_of([] { parse_resume("", "--resume"); }),
            "--resume: an empty value (latest, or a checkpoint path)");
}

}  // namespace
}  // namespace mantissa::train
