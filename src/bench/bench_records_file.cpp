// The file `mantissa bench train --json` appends to: refused before the benchmark runs unless
// it is new, empty, or already a file of bench records.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "mantissa/bench/benchmark.hpp"
#include "mantissa/error.hpp"
#include "mantissa/file_kind.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::bench {

void check_bench_records_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      // A new file: made and removed now, so that a path that cannot take it (a missing
      // directory, /proc) fails before the run rather than after it.
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0 && errno == EEXIST) return;  // a link to a file yet to be: appends follow it
      if (fd < 0) {
        throw Error(path + ": cannot be created (" + std::strerror(errno) +
                    "); the records would be lost after the run");
      }
      ::close(fd);
      ::unlink(path.c_str());
      return;
    }
    throw Error(path + ": cannot inspect the file for bench records (" + std::strerror(errno) +
                ")");
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(path + ": is " + file_kind(st.st_mode) +
                "; bench appends its records only to a regular file");
  }
  if (st.st_size == 0) return;
  const nlohmann::json first = support::first_line_json(path);
  const bool record = first.is_object() && first.contains("model") && first.contains("precision") &&
                      first.contains("items_per_s");
  if (!record) {
    throw Error(path +
                ": holds something other than bench records (its first line is not one); "
                "bench appends only to a new file, an empty one, or one it wrote before");
  }
}

}  // namespace mantissa::bench
