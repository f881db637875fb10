#include "mantissa/dist/bucketing.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mantissa/error.hpp"

namespace mantissa::dist {

BucketPlan plan_buckets(const std::vector<std::int64_t>& numels, std::int64_t cap_bytes) {
  if (cap_bytes <= 0) {
    throw Error(fmt::format("dist: bucket_cap_bytes must be > 0 (got {})", cap_bytes));
  }
  constexpr std::int64_t kBytes = 4;  // float32 gradients
  BucketPlan plan;
  plan.bucket_of.reserve(numels.size());
  for (std::size_t i = 0; i < numels.size(); ++i) {
    const std::int64_t n = numels[i];
    if (n < 0) throw Error(fmt::format("dist: parameter {} has {} elements", i, n));
    const bool fits =
        !plan.buckets.empty() && (plan.buckets.back().numel + n) * kBytes <= cap_bytes;
    if (!fits) plan.buckets.emplace_back();
    Bucket& b = plan.buckets.back();
    b.params.push_back(i);
    b.offsets.push_back(b.numel);
    b.numel += n;
    plan.bucket_of.push_back(plan.buckets.size() - 1);
  }
  return plan;
}

Range part_of(std::int64_t n, int parts, int part) {
  if (parts <= 0 || part < 0 || part >= parts || n < 0) {
    throw Error(fmt::format("dist: part {} of {} parts of {} elements", part, parts, n));
  }
  const std::int64_t base = n / parts;
  const std::int64_t extra = n % parts;
  const std::int64_t begin = part * base + std::min<std::int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

}  // namespace mantissa::dist
