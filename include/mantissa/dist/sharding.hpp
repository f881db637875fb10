#pragma once
// Data sharding: the global batch (what the config's batch_size names) split evenly across
// ranks in rank order, so that the union of the ranks' slices, in rank order, is the batch a
// single process would take.
#include <cstdint>
#include <string_view>

namespace mantissa::dist {

struct Shard {
  std::int64_t begin = 0;  // first sample of the global batch this rank takes
  std::int64_t count = 0;  // samples this rank takes: global_batch / size
};

// Rank `rank` of `size` takes samples [rank * b, (rank + 1) * b) of each global batch, with
// b = global_batch / size. Throws mantissa::Error when global_batch is not a positive multiple
// of size ("<what>: 10 (the global batch) does not split evenly across 3 ranks; use a
// multiple of 3 (such as 9 or 12)", `what` naming the setting), or rank is not in [0, size).
Shard shard_batch(std::int64_t global_batch, int rank, int size,
                  std::string_view what = "dist: batch_size");

}  // namespace mantissa::dist
