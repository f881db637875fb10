#include "run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "mantissa/write_file.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::train {
namespace fs = std::filesystem;
namespace {

std::string reason() {
  return std::strerror(errno);
}

// The pid the lock's holder wrote, as " (pid N)", or "" when there is none.
std::string holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  const long pid = std::strtol(buf, nullptr, 10);
  return pid > 0 ? " (pid " + std::to_string(pid) + ")" : "";
}

// True when the lock file holds nothing or what a trainer writes there: a pid and a newline.
bool holds_a_pid_or_nothing(int fd) {
  char buf[64] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  if (n <= 0) return n == 0;
  const std::string_view text(buf, static_cast<std::size_t>(n));
  const std::size_t digits = text.find_first_not_of("0123456789");
  return digits != 0 && (digits == std::string_view::npos || text.substr(digits) == "\n");
}

}  // namespace

RunDirLock::RunDirLock(const std::string& dir, Use use) {
  std::error_code ec;
  const bool train = use == Use::train;
  if (!train && !fs::exists(dir, ec)) {
    read_only_ = true;  // nothing to record into, nothing to create
    return;
  }
  dir_ = dir;
  created_ = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the run directory (" + ec.message() + ")");
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": the run directory is not a directory");
  const std::string path = (fs::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0 && !train && (errno == EROFS || errno == EACCES || errno == EPERM)) {
    // Evaluation of a run this process cannot write: its lock file, where there is one, still
    // tells whether someone trains there; where there is none, no one can.
    read_only_ = true;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0 && errno == ENOENT) return;
  }
  if (fd_ < 0 && errno == ELOOP) {  // a link would make the pid land in another file
    throw Error(path +
                ": is a symbolic link; mantissa never follows links inside a run "
                "directory (remove the link)");
  }
  if (fd_ < 0) {
    throw Error(dir + ": the run directory is not writable (cannot create " + path + ": " +
                reason() + ")");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path + ": is not a regular file of its own (the run directory's lock file; " +
                "a hard link would make the pid land in another file)");
  }
  if (::flock(fd_, (train ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const std::string who = holder(fd_);
    ::close(fd_);
    fd_ = -1;
    throw Error(dir + ": another mantissa process" + who +
                (train ? " is using this run directory" : " is training in this run directory") +
                " (it holds " + path +
                "); wait for it to finish, or set trainer.init.checkpoint.dir to another "
                "directory");
  }
  if (train && !holds_a_pid_or_nothing(fd_)) {  // a file of the user's, not ours to truncate
    ::close(fd_);
    fd_ = -1;
    throw Error(path +
                ": holds something other than a process id; mantissa keeps its lock "
                "in this file and would overwrite it (move the file away)");
  }
  if (train) {  // say who holds it, for the next process's refusal
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      const std::string why = reason();
      ::close(fd_);
      fd_ = -1;
      throw Error(path + ": cannot write (" + why + ")");
    }
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  if (created_) {  // still held: no other mantissa process can be adding to the directory
    std::error_code ec;
    bool only_the_lock = true;
    fs::directory_iterator it(dir_, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      only_the_lock = only_the_lock && it->path().filename() == ".lock";
    }
    if (!ec && only_the_lock) {
      fs::remove(fs::path(dir_) / ".lock", ec);
      ::close(fd_);          // releases the lock
      fs::remove(dir_, ec);  // (fails harmlessly if something arrived meanwhile)
      return;
    }
  }
  ::close(fd_);  // releases the lock
}

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsFile::open() {
  if (fd_ >= 0) return;
  fd_ = open_for_writing(path_, O_WRONLY | O_APPEND | O_CREAT, "the metrics file");
  // Appended to only when it is empty or mantissa's: records after a user's own file would
  // make neither readable.
  const nlohmann::json j = support::first_line_json(path_);
  if (j.is_null()) return;  // empty
  const bool ours = j.is_object() && (j.contains("run") || j.contains("eval_step"));
  if (!ours) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path_ +
                ": holds something other than mantissa's metrics records (its first line is "
                "neither a run nor an eval record); move it away or set "
                "trainer.init.checkpoint.dir to another directory");
  }
}

void MetricsFile::append(const std::string& line) {
  open();
  const std::string record = line + "\n";
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
  const ssize_t n = ::write(fd_, record.data(), record.size());
  if (n == static_cast<ssize_t>(record.size())) return;
  const std::string why = n < 0 ? reason() : "a short write of " + std::to_string(n) + " bytes";
  if (n > 0 && before >= 0 && ::ftruncate(fd_, before) != 0) {
    throw MetricsWriteError(path_ + ": cannot append a metrics record (" + why +
                            "), and the torn record could not be cut off");
  }
  throw MetricsWriteError(path_ + ": cannot append a metrics record (" + why + ")");
}

void check_checkpoints_are_ours(const std::string& dir, const std::optional<std::string>& resumed) {
  std::error_code ec;
  if (resumed && !fs::exists(*resumed, ec)) {  // before any advice about the directory
    std::string lower = *resumed;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    throw Error("--resume " + *resumed + ": no such file" +
                (lower == "latest" ? std::string(" (the newest checkpoint is --resume latest)")
                                   : std::string()));
  }
  // The file itself (a link to a checkpoint of this directory is that checkpoint).
  const fs::path file = resumed ? fs::weakly_canonical(*resumed, ec) : fs::path();
  const bool here = resumed && !ec && fs::equivalent(file.parent_path(), dir, ec) && !ec;
  const std::optional<std::int64_t> resumed_step =
      here ? step_in_checkpoint_name(file.filename().string()) : std::nullopt;
  // Not newer than the resumed one: by step, or by name for a name of the user's.
  const auto not_newer = [&](const std::string& c) {
    const std::optional<std::int64_t> step = step_in_checkpoint_name(c);
    return resumed_step && step ? *step <= *resumed_step
                                : fs::path(c).filename() <= file.filename();
  };
  std::vector<std::string> foreign;
  for (const std::string& c : list_checkpoints(dir)) {
    if (!(here && not_newer(c))) foreign.push_back(c);
  }
  if (foreign.empty()) return;
  std::string names;
  for (std::size_t i = 0; i < foreign.size() && i < 3; ++i) {
    names += (i ? ", " : "") + fs::path(foreign[i]).filename().string();
  }
  if (foreign.size() > 3) names += " and " + std::to_string(foreign.size() - 3) + " more";
  if (!here) {
    throw Error(dir + ": already holds checkpoints of another run (" + names + "); " +
                (resumed ? "a run resumed from " + *resumed + ", a file outside it,"
                         : std::string("a fresh run")) +
                " never overwrites or deletes them: resume that run with --resume latest, set "
                "trainer.init.checkpoint.dir to another directory, or move them away");
  }
  throw Error(dir + ": holds checkpoints newer than " + *resumed + " (" + names +
              "), which continuing from it would overwrite or delete: resume the newest with "
              "--resume latest, move the newer ones away, or set trainer.init.checkpoint.dir to "
              "another directory");
}

}  // namespace mantissa::train
