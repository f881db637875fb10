#pragma once
// Writing files (checkpoints, metrics, the lock file, reports, benchmark records): every
// write and every close is checked, and no write goes through a symbolic link or into
// anything but a regular file. Each failure is a mantissa::Error naming the path and the
// system's reason ("No space left on device").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "mantissa/error.hpp"
#include "mantissa/file_kind.hpp"

namespace mantissa {

// open(2) of `path` with `flags` | O_NOFOLLOW | O_CLOEXEC; `what` names the file in messages
// ("the metrics file"). A symbolic link at `path` is refused, never followed, and so is
// anything but a regular file (a FIFO is opened without waiting for a reader, then refused)
// and a regular file with other hard links (writing would change a file elsewhere); O_TRUNC
// is applied only after those checks.
inline int open_for_writing(const std::string& path, int flags, const std::string& what) {
  const int fd =
      ::open(path.c_str(), (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0 && errno == ELOOP) {
    throw Error(path + ": is a symbolic link; mantissa never writes " + what +
                " through a link (remove the link)");
  }
  struct stat st {};
  if (fd < 0 && errno == ENXIO && ::lstat(path.c_str(), &st) == 0) {  // a FIFO, no reader
    throw Error(path + ": is " + file_kind(st.st_mode) + "; mantissa writes " + what +
                " only to a regular file");
  }
  if (fd < 0) {
    throw Error(path + ": cannot open " + what + " for writing (" + std::strerror(errno) + ")");
  }
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": is " + file_kind(st.st_mode) + "; mantissa writes " + what +
                " only to a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
    ::close(fd);
    throw Error(path + ": has " + std::to_string(st.st_nlink) + " hard links; mantissa writes " +
                what + " only to a file of its own (remove the other links)");
  }
  if ((flags & O_TRUNC) != 0 && ::ftruncate(fd, 0) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(path + ": cannot truncate " + what + " (" + why + ")");
  }
  return fd;
}

// Writes all of `bytes` to `fd` (retrying short writes and EINTR).
inline void write_all(int fd, std::string_view bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw Error(path + ": write failed (" +
                  (n < 0 ? std::string(std::strerror(errno)) : "no bytes written") + ")");
    }
    done += static_cast<std::size_t>(n);
  }
}

// close(2), checked (NFS and full disks report a failed write at close).
inline void close_checked(int fd, const std::string& path) {
  if (::close(fd) != 0) throw Error(path + ": close failed (" + std::strerror(errno) + ")");
}

// Closes a descriptor on scope exit unless release()d (error paths).
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Refuses `path` when something that is not a regular file is there (a link, a device, a
// directory, a FIFO): writing would follow or replace it.
inline void require_regular_or_absent(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent (or unreachable: open says why)
  if (S_ISREG(st.st_mode)) return;
  throw Error(path + ": is " + file_kind(st.st_mode) + "; mantissa writes " + what +
              " only to a regular file or a new path, never over this");
}

// Appends `bytes` to the file a user named at `path` (created when absent; a link the user
// made is followed, as for any output they name), checked to the close: a full disk is an
// error naming the path, never a silent loss.
inline void append_file(const std::string& path, std::string_view bytes, const std::string& what) {
  const int raw = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (raw < 0) {
    throw Error(path + ": cannot open " + what + " for appending (" + std::strerror(errno) + ")");
  }
  FdGuard fd(raw);
  write_all(fd.get(), bytes, path);
  close_checked(fd.release(), path);
}

// Replaces the regular file at `path` (or creates it) with `bytes`: written to a new
// temporary beside it (O_EXCL), synced, closed and renamed over it, so a failure leaves the
// old file whole. Something at `path` that is not a regular file is refused.
inline void replace_file(const std::string& path, std::string_view bytes, const std::string& what) {
  require_regular_or_absent(path, what);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  FdGuard fd(open_for_writing(tmp, O_WRONLY | O_CREAT | O_EXCL, what));
  try {
    write_all(fd.get(), bytes, tmp);
    if (::fsync(fd.get()) != 0) throw Error(tmp + ": fsync failed (" + std::strerror(errno) + ")");
    close_checked(fd.release(), tmp);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot rename " + tmp + " into place (" + std::strerror(errno) + ")");
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace mantissa
