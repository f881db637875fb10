#pragma once
// Internal: what a Trainer does to its run directory, so that two processes never write one
// run directory at once, a run never overwrites or deletes checkpoints it did not write, and
// a failed metrics write is neither silent nor torn.
#include <optional>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::train {

// An flock on <dir>/.lock held for the object's life. Training holds it exclusively;
// evaluation shares it (several evaluations may read a run; none while it trains). Creating
// the directory and the lock file also proves the directory writable. A refusal is a
// mantissa::Error naming the directory and the process that holds it.
class RunDirLock {
 public:
  enum class Use { train, evaluate };
  // Use::evaluate writes nothing it does not need: a run directory that does not exist is not
  // created (an evaluation of a checkpoint from elsewhere records nothing in it), and one this
  // process cannot write (an archived run on a read-only file system) is read_only(): locked
  // through its existing lock file where there is one, and left unrecorded.
  RunDirLock(const std::string& dir, Use use);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  bool read_only() const { return read_only_; }

 private:
  std::string dir_;
  int fd_ = -1;
  bool read_only_ = false;
  // The directory did not exist before this lock made it: where it holds nothing but the lock
  // file when the lock is released (the run was refused before it wrote anything), both go.
  bool created_ = false;
};

// A metrics record that could not be written (the run checkpoints before it stops).
struct MetricsWriteError : Error {
  using Error::Error;
};

// <dir>/metrics.jsonl, appended one whole record per write(2).
class MetricsFile {
 public:
  explicit MetricsFile(std::string path) : path_(std::move(path)) {}
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  // Opens (creating) the file for appending, now: an unusable path fails before any work.
  void open();
  // Appends `line` and a newline. A write that fails or falls short is cut back off the file
  // (no torn record) and throws mantissa::Error naming the file and the system's reason.
  void append(const std::string& line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Refuses (mantissa::Error) to start a training run in `dir` when it holds checkpoints this
// run may not overwrite or delete: any, for a fresh run; for a run resumed from `resumed`,
// any newer than it in the same directory (all of them when `resumed` lies elsewhere).
void check_checkpoints_are_ours(const std::string& dir, const std::optional<std::string>& resumed);

}  // namespace mantissa::train
