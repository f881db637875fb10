#pragma once
// Reading a whole input file (configs, text corpora, IDX arrays, checkpoints, metrics): a path
// that is missing, unreadable, not a regular file (a directory, a FIFO, a device, a socket) or
// larger than the reader accepts is a mantissa::Error naming the path and the reason, never
// an empty read, a hang or an unrelated parse error. The open never blocks (O_NONBLOCK: a
// FIFO without a writer would otherwise wait forever) and the type is checked on the opened
// descriptor, so nothing can swap the file between the check and the read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/file_kind.hpp"

namespace mantissa {

// The bytes of the regular file at `path` (at most `max_bytes` of them); `what` names the
// kind of file in messages ("the config file": "<path>: cannot open the config file (No such
// file or directory)", "<path>: is a directory, not the config file"); `why_bound`, when
// given, says in the size message where `max_bytes` comes from.
inline std::string read_file(const std::string& path, const std::string& what,
                             std::int64_t max_bytes = INT64_MAX,
                             const std::string& why_bound = "") {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw Error(path + ": cannot open " + what + " (" + std::strerror(errno) + ")");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(path + ": cannot stat (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not " + what);
  if (!S_ISREG(st.st_mode)) {
    throw Error(path + ": is " + file_kind(st.st_mode) + ", not a regular file (expected " + what +
                ")");
  }
  if (st.st_size > max_bytes) {
    throw Error(path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                std::to_string(max_bytes) + " " + what + " may hold" +
                (why_bound.empty() ? "" : " (" + why_bound + ")"));
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path + ": read failed (" + std::strerror(errno) + ")");
    if (n == 0) break;  // the file shrank while being read
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace mantissa
