#pragma once
// Internal: a 64-bit FNV-1a digest (over 8-byte words, then the tail bytes), for comparing
// what the processes of a job hold (their config, their data, their restored state) without
// sending it.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mantissa::train::detail {

class Digest {
 public:
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h_ = (h_ ^ w) * kPrime;
    }
    for (; i < n; ++i) h_ = (h_ ^ p[i]) * kPrime;
    h_ = (h_ ^ n) * kPrime;  // the length ends each part: "ab"+"c" differs from "a"+"bc"
  }
  std::uint64_t value() const { return h_; }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ull;
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace mantissa::train::detail
