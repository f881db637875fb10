#pragma once
// Gradient buckets: parameters grouped, in the order given, into buckets of at most a cap of
// float32 gradient bytes, so that a bucket's all-reduce starts as soon as its gradients are
// final while the backward goes on. The plan is a pure function of the parameters' sizes and
// the cap: every rank computes the same one.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mantissa::dist {

struct Bucket {
  std::vector<std::size_t> params;    // indices into the parameter list, ascending
  std::vector<std::int64_t> offsets;  // each parameter's first element in the bucket
  std::int64_t numel = 0;             // elements in the bucket
};

struct BucketPlan {
  std::vector<Bucket> buckets;
  std::vector<std::size_t> bucket_of;  // parameter index -> its bucket
};

// Consecutive parameters fill a bucket until the next one would take it past cap_bytes
// (4 bytes an element); a parameter larger than the cap gets a bucket of its own (parameters
// are never split). cap_bytes > 0 and numels >= 0, else mantissa::Error.
BucketPlan plan_buckets(const std::vector<std::int64_t>& numels, std::int64_t cap_bytes);

// Part `part` of `parts` near-equal parts of n elements: [begin, end). The first n % parts
// parts hold one element more.
struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
};
Range part_of(std::int64_t n, int parts, int part);

}  // namespace mantissa::dist
