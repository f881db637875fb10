// Issue 27: only regular files are read (a FIFO would block open() forever), and every write
// is checked to the close (a full disk is an error naming the file, never a silent loss).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_of.hpp"
#include "mantissa/read_file.hpp"
#include "mantissa/write_file.hpp"

namespace mantissa {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("mantissa-file-io-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

TEST(FileIo, AFifoIsRefusedWithoutBlocking) {
  TempDir t;
  const std::string fifo = (t.dir / "f.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(testing::error_of([&] { read_file(fifo, "the config file"); }),
            fifo + ": is a FIFO, not a regular file (expected the config file)");
  EXPECT_EQ(testing::error_of([&] { read_file("/dev/null", "the text file"); }),
            "/dev/null: is a character device, not a regular file (expected the text file)");
}

TEST(FileIo, TheSizeBoundSaysWhereItComesFrom) {
  TempDir t;
  const std::string path = (t.dir / "c.txt").string();
  std::ofstream(path) << "0123456789";
  EXPECT_EQ(testing::error_of([&] { read_file(path, "the text file", 4, "a reason"); }),
            path + ": 10 bytes, more than the 4 the text file may hold (a reason)");
}

TEST(FileIo, AFullDiskIsAnErrorNamingTheFile) {
  EXPECT_EQ(testing::error_of([] { append_file("/dev/full", "{}\n", "--json records"); }),
            "/dev/full: write failed (No space left on device)");
}

TEST(FileIo, WritesNeverGoThroughALinkOrOverASpecialFile) {
  TempDir t;
  const std::string victim = (t.dir / "victim.txt").string(), link = (t.dir / "out").string();
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, link);
  EXPECT_EQ(testing::error_of([&] { replace_file(link, "x", "the report"); }),
            link +
                ": is a symbolic link; mantissa writes the report only to a regular file or "
                "a new path, never over this");
  EXPECT_EQ(testing::error_of([&] { open_for_writing(link, O_WRONLY, "the metrics file"); }),
            link +
                ": is a symbolic link; mantissa never writes the metrics file through a link "
                "(remove the link)");
  EXPECT_EQ(testing::error_of([] { replace_file("/dev/null", "x", "the report"); }),
            "/dev/null: is a character device; mantissa writes the report only to a regular file "
            "or a new path, never over this");
  const std::string hard = (t.dir / "metrics.jsonl").string();
  fs::create_hard_link(victim, hard);
  EXPECT_EQ(
      testing::error_of([&] { open_for_writing(hard, O_WRONLY | O_TRUNC, "the metrics file"); }),
      hard +
          ": has 2 hard links; mantissa writes the metrics file only to a file of its "
          "own (remove the other links)");
  std::ifstream in(victim);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
  const std::string fresh = (t.dir / "r.html").string();
  replace_file(fresh, "page", "the report");
  EXPECT_EQ(read_file(fresh, "the report"), "page");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(fresh)));
}

}  // namespace
}  // namespace mantissa
