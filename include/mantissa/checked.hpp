#pragma once
// Overflow-checked arithmetic for sizes that come from outside the program (file headers,
// configs): a product or sum that does not fit is nullopt, never a wrapped value.
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace mantissa {

inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The product of `dims` (1 for none), or nullopt when it overflows int64.
template <class Range>
std::optional<std::int64_t> checked_product(const Range& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) {
    const std::optional<std::int64_t> next = checked_mul(n, static_cast<std::int64_t>(d));
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// A sum of products of sizes that saturates at INT64_MAX (an overflow only ever means "more
// than anything can hold").
class SizeSum {
 public:
  SizeSum& add(std::initializer_list<std::int64_t> factors) {
    const std::optional<std::int64_t> p = checked_product(factors);
    const std::optional<std::int64_t> s = p ? checked_add(total_, *p) : std::nullopt;
    total_ = s ? *s : INT64_MAX;
    return *this;
  }
  std::int64_t total() const { return total_; }

 private:
  std::int64_t total_ = 0;
};

}  // namespace mantissa
