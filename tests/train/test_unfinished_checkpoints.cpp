// What a save cut short leaves (ckpt-*.safetensors.tmp) is deleted; nothing else is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mantissa/train/checkpoint.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;

TEST(UnfinishedCheckpoints, OnlyTheTemporaryFilesOfSavesAreDeleted) {
  const fs::path dir =
      fs::temp_directory_path() / ("mantissa_unfinished_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"ckpt-00000004.safetensors.tmp", "ckpt-00000008.safetensors.tmp",
                           "ckpt-00000002.safetensors", "notes.tmp", "metrics.jsonl"}) {
    std::ofstream(dir / name) << "x";
  }
  EXPECT_EQ(remove_unfinished_checkpoints(dir.string()), 2);
  EXPECT_FALSE(fs::exists(dir / "ckpt-00000004.safetensors.tmp"));
  EXPECT_FALSE(fs::exists(dir / "ckpt-00000008.safetensors.tmp"));
  for (const char* kept : {"ckpt-00000002.safetensors", "notes.tmp", "metrics.jsonl"}) {
    EXPECT_TRUE(fs::exists(dir / kept)) << kept;
  }
  EXPECT_EQ(remove_unfinished_checkpoints(dir.string()), 0);
  EXPECT_EQ(remove_unfinished_checkpoints((dir / "absent").string()), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mantissa::train
