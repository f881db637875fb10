#include "mantissa/dist/sharding.hpp"

#include <string>

#include <fmt/format.h>

#include "mantissa/error.hpp"

namespace mantissa::dist {

Shard shard_batch(std::int64_t global_batch, int rank, int size, std::string_view what) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw Error(fmt::format("dist: rank {} of {} ranks does not exist", rank, size));
  }
  if (global_batch <= 0 || global_batch % size != 0) {
    const std::int64_t below = global_batch / size * size;
    const std::string examples =
        below > 0 ? fmt::format("{} or {}", below, below + size) : fmt::format("{}", size);
    throw Error(
        fmt::format("{}: {} (the global batch) does not split evenly across {} ranks; use a "
                    "multiple of {} (such as {})",
                    what, global_batch, size, size, examples));
  }
  const std::int64_t b = global_batch / size;
  return {rank * b, b};
}

}  // namespace mantissa::dist
