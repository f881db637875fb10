#pragma once
// What a path holds, in words for messages ("f.yaml: is a FIFO, ..."), from its stat mode.
#include <sys/stat.h>

namespace mantissa {

inline const char* file_kind(mode_t mode) {
  return S_ISREG(mode)    ? "a regular file"
         : S_ISLNK(mode)  ? "a symbolic link"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
                          : "a special file";
}

}  // namespace mantissa
